"""One scripted policy, four doors: played directly through the agent view, through
Gymnasium, through a real MCP client over stdio, and through Inspect's react loop (the
scripted `discoverygym/parity` model), it leaves the same record: answer, verdict,
score, observations, submissions, tool calls and tool errors. The policy includes a
call out of range (our tool refuses it) and one of the wrong type (on Inspect, Inspect
itself refuses it): both count as one tool error that costs nothing, on every door."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from discoverygym.doors.gym import DiscoveryEnv
from door_parity_policy import SEED, _direct, _summary, drive, policy, report
from testpaths import TESTS


def _gym() -> dict[str, Any]:
    env = DiscoveryEnv("toy", task_id="guess", budget=10)
    env.reset(seed=SEED)
    out: dict[str, Any] = {}

    def call(name: str, args: dict[str, Any]) -> str:
        obs, _, _, _, info = env.step({"tool": env.tool_names.index(name),
                                       "args": json.dumps(args)})
        out.update(info.get("record") or {})
        return obs["text"]
    drive(call)
    return out


def _mcp(record: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env["DISCOVERYGYM_PLUGINS"] = "toy_suite"
    server = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "discoverygym.cli", "mcp", "toy", "guess", "--record", str(record),
        "--seed", str(SEED), "--budget", "10", "--no-interpreter"])

    async def play() -> None:
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                steps = policy()
                step = next(steps)
                while True:
                    result = await session.call_tool(*step)
                    try:
                        step = steps.send(result.content[0].text)
                    except StopIteration:
                        break
    anyio.run(play)
    return json.loads(record.read_text())


def _inspect(log_dir: Path) -> dict[str, Any]:
    from inspect_ai import eval as inspect_eval

    from discoverygym.doors.inspect.task import suite_task

    # The Task, not its name: when Inspect loaded our entry point in this process decides
    # whether the name "discoverygym/toy" exists (toy is a test plugin).
    [log] = inspect_eval(suite_task("toy"), model="discoverygym/parity", limit=1,
                         log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples
    return sample.scores["episode_record"].metadata["record"]


def test_the_same_policy_leaves_the_same_record_on_every_door(tmp_path):
    direct = _summary(_direct())
    assert direct["passed"] and direct["tool_errors"] == 2 and direct["observations"] == 8
    doors = {"gym": _gym(), "mcp": _mcp(tmp_path / "mcp.json"),
             "inspect": _inspect(tmp_path / "inspect")}
    for door, record in doors.items():
        assert record["seed"] == SEED, door
        assert _summary(record) == direct, (door, _summary(record), direct)
    report("agent view", _direct())
    for door, record in doors.items():
        report(door, record)
