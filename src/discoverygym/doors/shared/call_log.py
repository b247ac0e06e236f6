"""The one way a door keeps the agent's calls in its record's `details`.

`details["tool_log"]`: every call in order, the episode's tools and `python` alike
(tool, arguments and result cut to LOG_TEXT_CHARS, is_error, seconds; a python call
also says how it ended: `outcome` "ok", "timeout", "restarted", "refused" or the
exception's type). At most LOG_LIMIT calls are kept.
`details["sandbox"]`: the interpreter's isolation level, any weak-isolation warning,
its restarts and their events, and `python_calls` (how many times python ran).

Python calls are kept here and never in the episode's usage: they cost the agent
nothing. The Inspect door wrote this shape first; every door that offers `python`
writes it through this module, so a reader finds an agent's python calls in the same
place whichever door it came through."""

from __future__ import annotations

import json
from typing import Any

from ...core.bounded import clip

LOG_LIMIT = 300       # calls kept in the record
LOG_TEXT_CHARS = 400  # characters of arguments / results kept per call
PYTHON = "python"


def short(value: Any) -> str:
    """`value` as at most LOG_TEXT_CHARS characters (and a marker if it was cut).
    Arguments come from the agent: anything `json` cannot write is shown by type."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, default=str)
        except (ValueError, TypeError, RecursionError):
            text = f"<{type(value).__name__}>"
    return text if len(text) <= LOG_TEXT_CHARS else text[:LOG_TEXT_CHARS] + " [...]"


def python_outcome(result: Any) -> str:
    """One word on how a python call (a sandbox ExecResult) ended: "ok", "timeout",
    "restarted", or the exception's type (e.g. "FileNotFoundError")."""
    if result.timed_out:
        return "timeout"
    if result.error is None:
        return "restarted" if result.restarted else "ok"
    last = result.error.strip().splitlines()[-1] if result.error.strip() else "error"
    name = last.split(":", 1)[0].strip()
    return name if name.replace(".", "").replace("_", "").isalnum() else "error"


def sandbox_details(interpreter: Any, python_calls: int) -> dict[str, Any]:
    """What the record says about the interpreter (None: python never ran, so none
    was started)."""
    if interpreter is None:
        return {"isolation": None, "warning": None, "restarts": 0, "events": [],
                "python_calls": python_calls}
    return {"isolation": interpreter.isolation, "warning": interpreter.isolation_warning,
            "restarts": interpreter.restarts, "events": list(interpreter.events),
            "python_calls": python_calls}


class CallLog:
    """The calls of one episode, as its record will show them."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.python_calls = 0

    def note(self, tool: str, args: Any, text: str, is_error: bool, **extra: Any) -> None:
        """One call (an environment tool's, or a refused one)."""
        if len(self.entries) < LOG_LIMIT:
            self.entries.append({"tool": clip(str(tool), 100), "arguments": short(args),
                                 "is_error": bool(is_error), "result": short(text),
                                 **extra})

    def note_python(self, code: Any, result: Any) -> bool:
        """A python call that ran (`result`: the sandbox's ExecResult); returns whether
        it failed."""
        self.python_calls += 1
        failed = result.error is not None or result.timed_out
        extra: dict[str, Any] = {"outcome": python_outcome(result),
                                 "duration_s": round(result.duration_s, 4)}
        if result.restarted:
            extra["restarted"] = True
        if result.timed_out:
            extra["timed_out"] = True
        self.note(PYTHON, code, result.as_text(), failed, **extra)
        return failed

    def write(self, details: dict[str, Any], interpreter: Any) -> None:
        """Put the log and the interpreter's account into a record's `details`."""
        details["sandbox"] = sandbox_details(interpreter, self.python_calls)
        details["tool_log"] = list(self.entries)
