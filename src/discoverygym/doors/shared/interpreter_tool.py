"""The `python` tool every front-end offers beside an episode's own tools: a stateful
sandboxed interpreter that starts with the episode's workspace and is refreshed after
each environment tool call. Every call is kept in a CallLog (call_log.py), which the
door writes into the record's details."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...core import Episode, ToolResult, ToolSpec
from .call_log import PYTHON, CallLog

PYTHON_TOOL = ToolSpec(
    name=PYTHON,
    description=(
        "Run Python code in your private, stateful interpreter (numpy, scipy, pandas, sympy, "
        "astropy available; no network; variables persist between calls). The episode's data "
        "is preloaded as variables and refreshed after every other tool call. Print what you "
        "want to see; the value of a bare last expression is shown too."),
    parameters={"type": "object", "properties": {"code": {"type": "string"}},
                "required": ["code"], "additionalProperties": False},
)


#: Episode prompts are written for agents that have the `python` tool and its workspace.
#: A door (or a door's mode) that offers only the episode's own tools appends this, so its
#: instructions never promise a tool or variables the client cannot reach.
NO_INTERPRETER_NOTE = (
    "\n\nThis connection offers the tools listed and no python interpreter: the "
    "workspace and the variables the instructions above name (such as DataFrames) are "
    "not available here. Each tool's result text holds the data it returns; keep what "
    "you need.")


def prompt_for_door(prompt: str, *, interpreter: bool, note: str = NO_INTERPRETER_NOTE) -> str:
    """The episode's prompt as a door gives it: unchanged where the door offers the
    `python` tool, followed by `note` (what is missing) where it does not."""
    return prompt if interpreter else prompt + note


def episode_sandbox(episode: Episode, config: Any = None) -> Any:
    """`config` (a SandboxConfig, default limits when None) with the episode's own
    directories bound in (`Episode.sandbox_dirs`: data read-only, outputs writable)."""
    from ...sandbox import SandboxConfig

    config = config or SandboxConfig()
    python = episode.sandbox_python()
    if python and config.python is None:  # the task's own environment (packages)
        config = dataclasses.replace(config, python=python)
    dirs = episode.sandbox_dirs()
    if not dirs:
        return config
    return dataclasses.replace(
        config, ro_binds=(*config.ro_binds, *dirs.get("ro", ())),
        rw_binds=(*config.rw_binds, *dirs.get("rw", ())))


class InterpreterTool:
    """Owns one sandboxed interpreter for one episode. Created lazily on first use.
    `calls`: the episode's call log (the door's, when it logs its other tools' calls
    there too); every python call is noted in it."""

    def __init__(self, episode: Episode, calls: CallLog | None = None,
                 **config: Any) -> None:
        self._episode = episode
        self._config = config
        self._interpreter: Any = None
        self.calls = calls if calls is not None else CallLog()

    @property
    def isolation(self) -> str | None:
        return getattr(self._interpreter, "isolation", None)

    def _ensure(self) -> Any:
        if self._interpreter is None:
            from ...sandbox import Interpreter, SandboxConfig

            cfg = SandboxConfig(**self._config) if self._config else SandboxConfig()
            self._interpreter = Interpreter(self._episode.workspace(),
                                            config=episode_sandbox(self._episode, cfg))
        return self._interpreter

    def run(self, code: str) -> ToolResult:
        if not isinstance(code, str):
            refused = ToolResult("The python tool takes {'code': '<python source>'}.",
                                 is_error=True)
            self.calls.note(PYTHON, code, refused.text, True, outcome="refused")
            return refused
        res = self._ensure().execute(code)
        self.calls.note_python(code, res)
        parts = []
        if res.notice:
            parts.append(f"[{res.notice}]")
        if res.stdout:
            parts.append(res.stdout)
        if res.stderr:
            parts.append("[stderr]\n" + res.stderr)
        if res.value is not None:
            parts.append(res.value)
        if res.error:
            parts.append(res.error)
        return ToolResult("\n".join(parts) or "(no output)", is_error=bool(res.error))

    def record_calls(self, details: dict[str, Any]) -> None:
        """The call log and the interpreter's account, into a record's details."""
        self.calls.write(details, self._interpreter)

    def refresh(self) -> None:
        if self._interpreter is not None:
            self._interpreter.update_workspace(self._episode.workspace())

    def close(self) -> None:
        if self._interpreter is not None:
            self._interpreter.close()
            self._interpreter = None
