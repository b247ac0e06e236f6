"""Computed arrays (trajectories, eigensystems) cached in this process's memory and on
disk, for every suite that integrates or diagonalises something expensive.

An entry is keyed by a digest of everything that changes its numbers (`digest`) and a
name within it (e.g. the seed). On disk it is one `.npz` under the cache directory
(`DISCOVERYGYM_CACHE`, hidden from the sandbox), written to a temporary name and
renamed, so parallel workers never read half a file; a damaged or foreign file is
recomputed and replaced, never trusted. In memory the last `memory_items` built values
are kept (least recently used goes first)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .paths import cache_dir

T = TypeVar("T")
Arrays = dict[str, np.ndarray]


def digest(config: dict[str, Any], length: int = 16) -> str:
    """A short hash of a JSON-able description of what the arrays depend on."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:length]


def _read(path: Path) -> Arrays | None:
    if not path.exists():
        return None
    try:
        with np.load(path) as data:
            return {name: np.array(data[name]) for name in data.files}
    except (OSError, ValueError, KeyError, EOFError):  # torn or foreign: recompute
        return None


def _write(path: Path, arrays: Arrays) -> None:
    tmp = path.with_name(f"{path.stem}.{os.getpid()}-{threading.get_ident()}.tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)


class ArrayCache:
    """One kind of cached result, stored under `cache_dir(*where, digest)`."""

    def __init__(self, *where: str, memory_items: int = 16) -> None:
        self._where = where
        self._memory: OrderedDict[str, Any] = OrderedDict()
        self._memory_items = memory_items
        self._lock = threading.Lock()

    def path(self, key: str, name: str) -> Path:
        return cache_dir(*self._where, key) / f"{name}.npz"

    def clear_memory(self) -> None:
        with self._lock:
            self._memory.clear()

    def get(self, key: str, name: str, compute: Callable[[], Arrays],
            build: Callable[[Arrays], T]) -> T:
        """The value for (key, name): from memory, else `build` of the arrays on disk,
        else `build` of freshly `compute`d arrays (then written to disk)."""
        slot = f"{key}/{name}"
        with self._lock:
            if slot in self._memory:
                self._memory.move_to_end(slot)
                return self._memory[slot]
        path = self.path(key, name)
        arrays = _read(path)
        if arrays is None:
            arrays = compute()
            _write(path, arrays)
        value = build(arrays)
        with self._lock:
            self._memory[slot] = value
            while len(self._memory) > self._memory_items:
                self._memory.popitem(last=False)
        return value
