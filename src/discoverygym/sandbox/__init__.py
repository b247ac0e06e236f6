"""The sandbox: isolated Python for agents (stateful `Interpreter`) and verifiers
(one-shot `run_isolated`). See README.md in this folder for the isolation levels."""

from .config import ExecResult, IsolatedResult, SandboxConfig
from .interpreter import Interpreter, SandboxError
from .isolation import (
    LEVELS,
    WEAK_LEVELS,
    SandboxUnavailable,
    isolation_level,
    meets,
    resolve_level,
    strength,
    weak_warning,
)
from .oneshot import run_isolated

__all__ = [
    "LEVELS", "WEAK_LEVELS", "ExecResult", "Interpreter", "IsolatedResult", "SandboxConfig",
    "SandboxError", "SandboxUnavailable", "isolation_level", "meets", "resolve_level",
    "run_isolated", "strength", "weak_warning",
]
