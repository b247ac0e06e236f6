"""One episode being played through Inspect: the Episode, its sandboxed interpreter,
and a short log of every tool call (kept in the record's details)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from ...core import EpisodeSpec, ToolResult
from ...sandbox import ExecResult, Interpreter, SandboxConfig
from ..interpreter_tool import episode_sandbox

PYTHON_TOOL = "python"
LOG_LIMIT = 300       # tool calls kept in the record
LOG_TEXT_CHARS = 400  # characters of arguments / results kept per call

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


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= LOG_TEXT_CHARS else text[:LOG_TEXT_CHARS] + " [...]"


def python_outcome(result: ExecResult) -> str:
    """One word on how a python call ended, for the record: "ok", "timeout", or the
    exception's type (e.g. "FileNotFoundError", "ModuleNotFoundError")."""
    if result.timed_out:
        return "timeout"
    if result.error is None:
        return "restarted" if result.restarted else "ok"
    last = result.error.strip().splitlines()[-1] if result.error.strip() else "error"
    name = last.split(":", 1)[0].strip()
    return name if name.replace(".", "").replace("_", "").isalnum() else "error"


class EpisodeSession:
    """An episode and its interpreter. Tool calls are blocking; the Inspect tools
    run them in a worker thread."""

    def __init__(self, spec: EpisodeSpec, sandbox: SandboxConfig | None = None) -> None:
        self.spec = spec
        self.episode = spec.build()
        self.interpreter = Interpreter(self.episode.workspace(),
                                       episode_sandbox(self.episode, sandbox or SandboxConfig()))
        self.log: list[dict[str, Any]] = []
        self.n_python = 0
        self.stopped_reason: str | None = None
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        return self.episode.done

    def _note(self, tool: str, args: Any, text: str, is_error: bool, **extra: Any) -> None:
        if len(self.log) < LOG_LIMIT:
            self.log.append({"tool": tool, "arguments": _short(args), "is_error": is_error,
                             "result": _short(text), **extra})

    def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        """An environment tool call; the interpreter's workspace is refreshed after it."""
        with self._lock:
            started = time.perf_counter()
            result = self.episode.call(name, args)
            if not self.episode.done:
                self.interpreter.update_workspace(self.episode.workspace())
            self._note(name, args, result.text, result.is_error,
                       duration_s=round(time.perf_counter() - started, 4))
            return result

    def refuse(self, name: str, reason: str) -> None:
        """A call Inspect refused before it reached the episode: a free tool error."""
        with self._lock:
            result = self.episode.refuse(name, reason)
            self._note(name, None, result.text, True)

    def run_python(self, code: str) -> tuple[str, bool]:
        """Run code in the interpreter: (text for the agent, whether it failed)."""
        with self._lock:
            self.n_python += 1
            result = self.interpreter.execute(code)
            failed = result.error is not None or result.timed_out
            extra: dict[str, Any] = {"outcome": python_outcome(result),
                                     "duration_s": round(result.duration_s, 4)}
            if result.restarted:
                extra["restarted"] = True
            if result.timed_out:
                extra["timed_out"] = True
            self._note(PYTHON_TOOL, code, result.as_text(), failed, **extra)
            return result.as_text(), failed

    def sandbox_details(self) -> dict[str, Any]:
        interp = self.interpreter
        return {"isolation": interp.isolation, "warning": interp.isolation_warning,
                "restarts": interp.restarts, "events": list(interp.events),
                "python_calls": self.n_python}

    def close(self) -> None:
        self.interpreter.close()
