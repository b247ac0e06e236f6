"""A module that is imported the first time one of its attributes is read.

Importing JAX costs about a second of CPU in every process. Several processes load
modules written against JAX and never call it: mad's planning parent (it reads the
worlds' laws and options), the quantum world's workers, and the sandbox that runs an
agent's law with NumPy (`xp=np`). Those modules name `jax` and `jax.numpy` through
`lazy_module`, so only a process that computes with JAX pays for it."""

from __future__ import annotations

import importlib
import types
from typing import Any


class _LazyModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self.__name__), attr)
        setattr(self, attr, value)  # later reads are plain attribute lookups
        return value


def lazy_module(name: str) -> types.ModuleType:
    """A stand-in for the module `name` (e.g. "jax.numpy"), imported on first use."""
    return _LazyModule(name)


def is_module(xp: Any, name: str) -> bool:
    """Whether `xp` is the module `name` or its lazy stand-in."""
    return getattr(xp, "__name__", None) == name
