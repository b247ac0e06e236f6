"""One episode being played through Inspect: the Episode, its sandboxed interpreter,
and the log of every tool call (kept in the record's details the way every door keeps
it: doors/shared/call_log.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

from ...core import EpisodeSpec, ToolResult
from ...sandbox import Interpreter, SandboxConfig
from ..shared.call_log import PYTHON, CallLog
from ..shared.interpreter_tool import episode_sandbox

PYTHON_TOOL = PYTHON

PYTHON_TOOL_DESCRIPTION = (
    "Run Python code in your persistent, sandboxed interpreter. It holds your data as "
    "variables (refreshed after every other tool call); numpy (np), pandas (pd), scipy, "
    "sympy and astropy are available; no network. Returns stdout, stderr, errors and "
    "the value of a bare last expression (long output is truncated). Each run has a "
    "time limit; if it is exceeded the interpreter restarts with your data variables "
    "restored."
)
PYTHON_TOOL_PARAMETERS = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Python source to run."}},
    "required": ["code"],
    "additionalProperties": False,
}


class EpisodeSession:
    """An episode and its interpreter. Tool calls are blocking; the Inspect tools
    run them in a worker thread."""

    def __init__(self, spec: EpisodeSpec, sandbox: SandboxConfig | None = None) -> None:
        self.spec = spec
        self.episode = spec.build()
        self.interpreter = Interpreter(self.episode.workspace(),
                                       episode_sandbox(self.episode, sandbox or SandboxConfig()))
        self.calls = CallLog()
        self.stopped_reason: str | None = None
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        return self.episode.done

    def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        """An environment tool call; the interpreter's workspace is refreshed after it."""
        with self._lock:
            started = time.perf_counter()
            result = self.episode.call(name, args)
            if not self.episode.done:
                self.interpreter.update_workspace(self.episode.workspace())
            self.calls.note(name, args, result.text, result.is_error,
                            duration_s=round(time.perf_counter() - started, 4))
            return result

    def refuse(self, name: str, reason: str) -> None:
        """A call Inspect refused before it reached the episode: a free tool error."""
        with self._lock:
            result = self.episode.refuse(name, reason)
            self.calls.note(name, None, result.text, True)

    def run_python(self, code: str) -> tuple[str, bool]:
        """Run code in the interpreter: (text for the agent, whether it failed)."""
        with self._lock:
            result = self.interpreter.execute(code)
            failed = self.calls.note_python(code, result)
            return result.as_text(), failed

    def record_calls(self, details: dict[str, Any]) -> None:
        """The calls and the interpreter's account, into a record's details (shared
        with every door that offers python: doors/shared/call_log.py)."""
        self.calls.write(details, self.interpreter)

    def close(self) -> None:
        self.interpreter.close()
