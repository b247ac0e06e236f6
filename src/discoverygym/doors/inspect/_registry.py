"""Inspect's entry point (`[project.entry-points.inspect_ai]`): registers the
`discoverygym` model provider and one task per suite, so that
`inspect eval discoverygym/gravity -T protocol=budget-obs-100 --model discoverygym/expert`
works."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task

from ...core import SUITES, load_plugins
from .provider import ScriptedPolicyAPI  # noqa: F401  (registers the model API)
from .task import suite_task


def _suite_task_factory(suite: str) -> Any:
    def make(**options: Any) -> Task:
        return suite_task(suite, **options)

    make.__name__ = suite.replace("-", "_")
    make.__qualname__ = make.__name__
    make.__doc__ = (f"The {suite} suite's episodes; -T takes the suite's run options and "
                    "seeds (-T seeds=0-4) "
                    f"(see `discoverygym options {suite}`).")
    return task(name=suite)(make)


load_plugins()
TASKS = {name: _suite_task_factory(name) for name in list(SUITES)}
