"""The audit's attack on the MCP door's calls racing the end of an episode (server.py),
declared here beside the server it attacks (see core.audit_registry) and listed in
audit.PLATFORM_ATTACK_MODULES. Played in process through the door's own server
(`build_server`) and an in-memory MCP client; where the MCP SDK is not installed the
family does not apply.

- `mcp-race` (issue #38): a client sends four calls at once and, while they run, the
  call that ends the episode. Before, the door ran the episode's tools in worker threads
  side by side: the record was taken when the episode ended, and calls still running
  then were served to the client afterwards (two observes racing a submit gave the
  client 20 rows the record counted as 0 observations). Held: every call the client is
  served ran before the record was taken (so the record counts it); a call that comes
  after the end is refused.

The race is made wide and the same for every suite with two stand-in tools added to
the audited episode's own tool table: a slow one, which waits (at most 0.5 s) for the
record to be taken, so that it is still running then however loaded the machine is,
and one that ends the episode (as a submit does). What is attacked is
the door's handling of concurrent calls, not a suite's tools."""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

from ...core.audit_registry import AttackFamily, AuditTarget, Outcome, guard, where_importable
from ...core.tools import ToolResult, ToolSpec

FAMILY = "mcp-race"
SLOW_TOOL, END_TOOL = "audit_slow_call", "audit_end_episode"
N_RACING = 4
#: How long a slow call waits for the record: it returns as soon as the record is taken
#: where the door lets the end run beside it, after this wait where the door holds the
#: end until the call has returned.
WAIT_FOR_RECORD_S = 0.5


def _instrumented(target: AuditTarget) -> tuple[Any, dict[str, Any]]:
    """The audit case's episode with the two stand-in tools, and what they saw: how many
    slow calls returned a result, and how many of those returned after the record was
    taken."""
    episode = target.make_episode()
    seen: dict[str, Any] = {"served": 0, "served_after_record": 0}
    lock, recorded = threading.Lock(), threading.Event()
    anything = {"type": "object", "properties": {}}

    def slow(args: dict[str, Any]) -> ToolResult:
        recorded.wait(WAIT_FOR_RECORD_S)  # a call still running when the episode ends
        with lock:
            seen["served"] += 1
            seen["served_after_record"] += recorded.is_set()
        return ToolResult("served")

    def end(args: dict[str, Any]) -> ToolResult:
        episode.end()
        return ToolResult("ended")

    episode._tool_table[SLOW_TOOL] = (ToolSpec(SLOW_TOOL, "audit: a slow call", anything),
                                      slow)
    episode._tool_table[END_TOOL] = (ToolSpec(END_TOOL, "audit: end the episode", anything),
                                     end)
    taken = episode.record

    def record(*args: Any, **kwargs: Any) -> Any:
        with lock:
            recorded.set()
        return taken(*args, **kwargs)

    episode.record = record  # type: ignore[method-assign]
    return episode, seen


async def _race(episode: Any, record_path: Path) -> list[bool]:
    import anyio
    from mcp import Client

    from .server import build_server

    bound = build_server(episode, record_path, interpreter=False)
    served: list[bool] = []
    async with Client(bound.server) as client:
        async def slow_call() -> None:
            res = await client.call_tool(SLOW_TOOL, {})
            served.append(not res.is_error)

        async with anyio.create_task_group() as group:
            for _ in range(N_RACING):
                group.start_soon(slow_call)
            await anyio.sleep(0.05)  # the end arrives while the calls run
            group.start_soon(client.call_tool, END_TOOL, {})
    return served


def _calls_racing_the_end(target: AuditTarget) -> tuple[bool, str]:
    import anyio

    episode, seen = _instrumented(target)
    with tempfile.TemporaryDirectory(prefix="dg-audit-mcp-race-") as tmp:
        record_path = Path(tmp) / "record.json"
        served = anyio.run(_race, episode, record_path)
        if not record_path.is_file():
            return False, "the episode ended but the door wrote no record"
        record = json.loads(record_path.read_text())
    late = seen["served_after_record"]
    return (late == 0 and sum(served) == seen["served"],
            f"{sum(served)} of {N_RACING} racing calls served to the client, "
            f"{late} of them after the record was taken (the record never counts those); "
            f"the record has {record.get('usage', {}).get('tool_calls')} tool calls")


def race_attacks(target: AuditTarget) -> list[Outcome]:
    return [guard(FAMILY, f"{N_RACING} calls sent at once, then the call that ends the "
                  "episode while they run (as observes racing a submit)",
                  "each call served ran before the record was taken; later ones refused",
                  lambda: _calls_racing_the_end(target))]



ATTACKS = (
    AttackFamily(FAMILY, "calls racing the end of an MCP episode: served and counted, or "
                 "refused (where the MCP SDK is installed)", race_attacks,
                 applies=where_importable("mcp.server.lowlevel")),
)
