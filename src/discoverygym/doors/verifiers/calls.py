"""Call identity, so that a call is charged once however often the transport resends it.

The MCP client of verifiers' chat harness retries a failed `tools/call` up to 6 times on
a fresh connection, with nothing that says which model call it belongs to. The Task's
request hook writes every proposed call (id, name, canonical arguments) into the
rollout state before the harness sees the model's turn; the tool server gives each
request the first proposed call with the same name and arguments that it has not
answered yet, and a request that only matches the call it answered last is that call's
retry: it gets the stored answer and is charged nothing. A request that matches no
proposed call (the toolset driven without the Task) gets an id of its own."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ...core import ToolResult
from .state import ProposedCall

#: Call ids longer than this are kept as a digest: the model writes them, and the state
#: they are kept in travels whole with every tool call.
MAX_CALL_ID_CHARS = 64


def bounded_id(call_id: str) -> str:
    """The call id as kept in the rollout state: itself when short, else its digest."""
    if len(call_id) <= MAX_CALL_ID_CHARS:
        return call_id
    return "sha256:" + hashlib.sha256(call_id.encode("utf-8", "replace")).hexdigest()


def canonical(arguments: Any) -> str:
    """One spelling per value, so the model's text and the decoded request compare."""
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    except (RecursionError, ValueError):  # hostile nesting: never equal to a proposal
        return f"<unspellable {type(arguments).__name__}>"


class CallLedger:
    """The answers a tool server gave, by call key (turn and id)."""

    def __init__(self) -> None:
        self.answers: dict[str, ToolResult] = {}
        self._last: tuple[str, str, str] | None = None  # (name, arguments, id)
        self._unlisted = 0

    def identify(self, name: str, arguments: Any, proposed: list[ProposedCall]) -> str:
        """The call id of a request: a new call, or the retry of the last answered one."""
        spelled = canonical(arguments)
        for call in proposed:
            if call.key not in self.answers and call.name == name and call.arguments == spelled:
                return call.key
        if self._last is not None and self._last[:2] == (name, spelled):
            return self._last[2]
        self._unlisted += 1
        return f"unlisted-{self._unlisted}"

    def answer(self, call_id: str, name: str, arguments: Any, result: ToolResult) -> None:
        self.answers[call_id] = result
        self._last = (name, canonical(arguments), call_id)
