"""Where the package keeps generated data. Everything an agent must not read lives
under `cache_dir()`, which the sandbox hides."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from .. import __version__


def cache_dir(*parts: str) -> Path:
    """The cache root (env `DISCOVERYGYM_CACHE`, else the user cache directory),
    versioned so an upgrade never reads stale simulations. Created on demand."""
    root = os.environ.get("DISCOVERYGYM_CACHE")
    base = Path(root) if root else Path(platformdirs.user_cache_dir("discoverygym"))
    path = base / __version__ / Path(*parts) if parts else base / __version__
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_root() -> Path:
    """The unversioned cache root (what a sandbox must hide as a whole)."""
    root = os.environ.get("DISCOVERYGYM_CACHE")
    return Path(root) if root else Path(platformdirs.user_cache_dir("discoverygym"))


def package_dir() -> Path:
    """The installed package's source directory (holds task tables; hidden from agents)."""
    return Path(__file__).resolve().parent.parent
