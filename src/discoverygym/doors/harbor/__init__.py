"""Harbor task export: `discoverygym export harbor SUITE OUT_DIR`.

A pure file generator (no Harbor import): each episode becomes a directory in Harbor's
task layout. Single-submit episodes become file tasks, scored by a separate,
no-network verifier that rebuilds the episode from its spec (`verify.py`); the others
keep their tools live in an MCP sidecar. See README.md beside this file."""

from .dataset import export_tasks
from .export import ExportedTask

__all__ = ["ExportedTask", "export_tasks"]
