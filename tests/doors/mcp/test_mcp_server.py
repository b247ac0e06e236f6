"""An MCP client (the SDK's, over real stdio) plays an episode to a record."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from testpaths import TESTS

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402


def _server(args: list[str]) -> StdioServerParameters:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env["DISCOVERYGYM_PLUGINS"] = "toy_suite"
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "discoverygym.cli", "mcp", *args], env=env)


async def _play(args: list[str], bad_first: bool, submit: bool) -> dict:
    async with stdio_client(_server(args)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert "hidden number" in (init.instructions or "")
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"probe", "submit"} <= tools
            if bad_first:
                bad = await session.call_tool("probe", {"x": "not a number"})
                assert bad.is_error and "number" in bad.content[0].text
            lo, hi = 0.0, 100.0
            for _ in range(9):
                mid = (lo + hi) / 2
                res = await session.call_tool("probe", {"x": mid})
                if "True" in res.content[0].text:
                    lo = mid
                else:
                    hi = mid
            if submit:
                res = await session.call_tool("submit", {"answer": (lo + hi) / 2})
                text = res.content[0].text
                assert "ended" in text and "abs_error" not in text and "pass" not in text
    return {}


def test_mcp_client_plays_to_a_passing_record(tmp_path):
    record = tmp_path / "rec.json"
    anyio.run(_play, ["toy", "guess", "--record", str(record), "--seed", "3", "--budget", "10",
                      "--no-interpreter"], True, True)
    data = json.loads(record.read_text())
    assert data["passed"] is True and data["agent"] == "mcp-client"
    assert data["usage"]["tool_errors"] == 1 and data["usage"]["observations"] == 9


def test_disconnect_without_answer_is_a_failed_record(tmp_path):
    record = tmp_path / "rec.json"
    anyio.run(_play, ["toy", "guess", "--record", str(record), "--budget", "10",
                      "--no-interpreter"], False, False)
    data = json.loads(record.read_text())
    assert data["passed"] is False and "disconnected" in data["error"]


async def _play_gravity_period(args: list[str]) -> dict:
    """A client that observes, computes in the server's sandboxed python tool, and
    submits: the period of world A from a periodogram of the separation."""
    async with stdio_client(_server(args)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert "period" in (init.instructions or "").lower()
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"observe", "submit", "python"} <= tools
            res = await session.call_tool("python", {"code": "print(window[1])"})
            end = float(res.content[0].text.strip().splitlines()[-1])
            for k in range(10):
                times = [end * (10 * k + i) / 99 for i in range(10)]
                res = await session.call_tool("observe", {"times": times})
                assert not res.is_error, res.content[0].text
            over = await session.call_tool("observe", {"times": [0.0]})
            assert over.is_error and "0 of 100 remain" in over.content[0].text
            code = """
import numpy as np
from scipy.signal import lombscargle
t = observations["time"].to_numpy() * units["time_to_s"]
r = np.hypot(observations["star2_x"] - observations["star1_x"],
             observations["star2_y"] - observations["star1_y"]).to_numpy()
periods = np.linspace(t[-1] / 30, t[-1] / 2, 20000)
power = lombscargle(t, r - r.mean(), 2 * np.pi / periods)
print(periods[np.argmax(power)])
"""
            res = await session.call_tool("python", {"code": code})
            period_s = float(res.content[0].text.strip().splitlines()[-1])
            res = await session.call_tool("submit", {"answer": period_s})
            assert not res.is_error and "relative_error" not in res.content[0].text
    return {}


def test_mcp_client_plays_a_gravity_episode_to_a_passing_record(tmp_path):
    record = tmp_path / "rec.json"
    anyio.run(_play_gravity_period, ["gravity", "period", "--world", "A", "--protocol",
                                     "budget-obs-100", "--record", str(record)])
    data = json.loads(record.read_text())
    assert data["suite"] == "gravity" and data["agent"] == "mcp-client"
    assert data["passed"] is True, (data["answer"], data["truth"], data["value"])
    assert data["usage"]["observations"] == 100 and data["usage"]["tool_errors"] == 1


async def _hostile(args: list[str]) -> list[tuple[bool, int]]:
    deep: object = 0
    for _ in range(200):
        deep = [deep]
    seen = []
    async with stdio_client(_server(args)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for value in (10**400, deep, "y" * 2_000_000, [0.5] * 300_000):
                res = await session.call_tool("probe", {"x": value})
                seen.append((res.is_error, len(res.content[0].text)))
            await session.call_tool("submit", {"answer": 50.0})
    return seen


def test_hostile_arguments_over_mcp_are_short_free_errors_and_the_record_is_written(tmp_path):
    """Before: `submit` with 10**400 was accepted and record() raised OverflowError, so
    the MCP client got an exception and no record file was written; and a 200-deep
    argument was dropped by the SDK's parser without a reply, so the client waited
    forever. Now each is a short error that costs nothing, and the record is written."""
    record = tmp_path / "rec.json"
    seen = anyio.run(_hostile, ["toy", "guess", "--record", str(record), "--seed", "3",
                                "--budget", "10", "--no-interpreter"])
    assert all(is_error and size < 1000 for is_error, size in seen), seen
    data = json.loads(record.read_text())
    assert data["usage"]["observations"] == 0 and data["usage"]["tool_errors"] == 4
    assert data["answer"] == 50.0



async def _race(record: Path) -> list[bool]:
    """Four probes that each take 0.2 s, and a submit sent while they run, through the
    door's own server in this process; which probes the client was served."""
    import time

    from mcp import Client

    import toy_suite
    from discoverygym.core import get_suite
    from discoverygym.doors.mcp.server import build_server

    toy_suite.install()
    episode = get_suite("toy").episode("guess", seed=0, budget=40)
    spec, fast = episode._tool_table["probe"]

    def slow_probe(args):
        time.sleep(0.2)  # a call still running when the submit ends the episode
        return fast(args)

    episode._tool_table["probe"] = (spec, slow_probe)
    bound = build_server(episode, record, interpreter=False)
    served: list[bool] = []
    async with Client(bound.server) as client:
        async def probe(x: float) -> None:
            res = await client.call_tool("probe", {"x": x})
            served.append(not res.is_error)

        async with anyio.create_task_group() as group:
            for i in range(4):
                group.start_soon(probe, float(i))
            await anyio.sleep(0.05)
            group.start_soon(client.call_tool, "submit", {"answer": 50.0})
    return served


def test_a_call_racing_submit_is_served_and_counted_or_refused(tmp_path):
    """Issue #38: two observes racing a submit sent the client 20 rows that the record
    counted as 0 observations (here: 4 probes served, 0 counted). Calls now run one at a
    time: each probe the client was served is in the record; one after the end would
    be refused."""
    record = tmp_path / "rec.json"
    served = anyio.run(_race, record)
    data = json.loads(record.read_text())
    assert served and data["usage"]["observations"] == sum(served), (served, data["usage"])


def test_the_race_family_holds_and_finds_the_hole_with_calls_side_by_side(monkeypatch):
    """The audit's `mcp-race` family (doors/mcp/attacks.py), declared beside the server:
    held now; with the door's one-call-at-a-time lock gone (calls side by side in worker
    threads, as before issue #38), calls served after the record was taken are found."""
    import contextlib
    import types

    from discoverygym.audit import PLATFORM_ATTACK_MODULES
    from discoverygym.core import get_suite
    from discoverygym.core.audit_registry import AuditTarget
    from discoverygym.doors.mcp import attacks, server

    assert "discoverygym.doors.mcp.attacks" in PLATFORM_ATTACK_MODULES
    target = AuditTarget(get_suite("gravity"))
    held = attacks.race_attacks(target)
    assert [o.ok for o in held] == [True], held
    monkeypatch.setattr(server, "threading", types.SimpleNamespace(Lock=contextlib.nullcontext))
    found = attacks.race_attacks(target)
    assert [o.ok for o in found] == [False] and "after the record was taken" in found[0].observed
