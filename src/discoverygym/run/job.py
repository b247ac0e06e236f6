"""What every executor runs: a picklable function and its arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Job = tuple[Callable[..., Any], tuple[Any, ...]]
