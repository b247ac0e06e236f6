"""Every door that offers the sandboxed `python` tool keeps the agent's python calls in
the record's details the same way (doors/shared/call_log.py): `tool_log` entries with
the code, the result, how the call ended and its seconds, and `sandbox.python_calls`.
Each door is played as an agent plays it (Inspect's react loop with a scripted model,
an MCP client over real stdio); the verifiers door's check is in
tests/doors/verifiers/test_verifiers_toolset.py (its own environment, `make test-rl`), OpenEnv's in
tests/doors/openenv/test_openenv_door.py (`make test-openenv`). Gymnasium and OpenEnv offer no
python: their checks say so, so a door that starts offering it must record it."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest

import toy_suite
from discoverygym.core import EpisodeSpec, get_suite
from discoverygym.doors.shared.call_log import LOG_LIMIT, LOG_TEXT_CHARS, CallLog
from testpaths import TESTS

toy_suite.install()
#: What every door writes for one python call that ran, and about the interpreter.
PYTHON_ENTRY_KEYS = {"tool", "arguments", "is_error", "result", "outcome", "duration_s"}
SANDBOX_KEYS = {"isolation", "warning", "restarts", "events", "python_calls"}


def _python_entries(record: dict) -> list[dict]:
    return [e for e in record["details"]["tool_log"] if e["tool"] == "python"]


def _check_shape(record: dict) -> None:
    assert set(record["details"]["sandbox"]) == SANDBOX_KEYS
    for entry in _python_entries(record):
        if entry.get("outcome") != "refused":
            assert PYTHON_ENTRY_KEYS <= set(entry), entry
    # python calls cost the agent nothing: they are not the episode's tool calls
    env_calls = [e for e in record["details"]["tool_log"] if e["tool"] != "python"]
    assert record["usage"]["tool_calls"] == len(env_calls)


def test_inspect_records_the_python_call(tmp_path):
    pytest.importorskip("inspect_ai")
    from discoverygym.doors.inspect.model_run import run_model

    result = run_model("toy", get_suite("toy").episodes([0]), model="discoverygym/expert",
                       out_dir=tmp_path / "run")
    [record] = result.records
    [entry] = _python_entries(record)
    assert entry["outcome"] == "ok" and not entry["is_error"]
    assert entry["arguments"].endswith(") / 2") and float(entry["result"]) == record["answer"]
    assert record["details"]["sandbox"]["python_calls"] == 1
    _check_shape(record)


# ---- MCP: a client over real stdio ----------------------------------------------------
def _mcp_server(args: list[str]) -> object:
    from mcp.client.stdio import StdioServerParameters

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env["DISCOVERYGYM_PLUGINS"] = "toy_suite"
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "discoverygym.cli", "mcp", *args], env=env)


async def _mcp_python_calls(args: list[str], calls: list[dict]) -> list[str]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    texts = []
    async with stdio_client(_mcp_server(args)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("probe", {"x": 50.0})
            for arguments in calls:
                res = await session.call_tool("python", arguments)
                texts.append(res.content[0].text)
            await session.call_tool("submit", {"answer": 50.0})
    return texts


def test_mcp_records_the_python_call(tmp_path):
    """Before: the MCP door ran python and kept nothing of it in the record (only the
    isolation level)."""
    pytest.importorskip("mcp")
    record_path = tmp_path / "rec.json"
    texts = anyio.run(_mcp_python_calls, ["toy", "guess", "--record", str(record_path),
                                          "--budget", "10"],
                      [{"code": "print(40 + 2)"}, {"code": "1 / 0"}])
    assert texts[0].strip() == "42" and "ZeroDivisionError" in texts[1]
    record = json.loads(record_path.read_text())
    ok, failed = _python_entries(record)
    assert ok["arguments"] == "print(40 + 2)" and ok["result"].strip() == "42"
    assert ok["outcome"] == "ok" and not ok["is_error"]
    assert failed["outcome"] == "ZeroDivisionError" and failed["is_error"]
    assert record["details"]["sandbox"]["python_calls"] == 2
    assert record["details"]["sandbox"]["isolation"]  # the interpreter ran
    assert [e["tool"] for e in record["details"]["tool_log"]] == [
        "probe", "python", "python", "submit"]
    _check_shape(record)


def test_mcp_hostile_python_calls_are_bounded_in_the_record(tmp_path):
    """Code that is not text is refused (and logged as refused, not run); a megabyte of
    code is kept as its first LOG_TEXT_CHARS characters."""
    pytest.importorskip("mcp")
    record_path = tmp_path / "rec.json"
    big = "x = 1  # " + "y" * 1_000_000
    anyio.run(_mcp_python_calls, ["toy", "guess", "--record", str(record_path),
                                  "--budget", "10"], [{"code": 5}, {"code": big}])
    record = json.loads(record_path.read_text())
    refused, ran = _python_entries(record)
    assert refused["outcome"] == "refused" and refused["is_error"]
    assert ran["outcome"] == "ok" and len(ran["arguments"]) <= LOG_TEXT_CHARS + 10
    assert record["details"]["sandbox"]["python_calls"] == 1
    assert len(record_path.read_text()) < 50_000


def test_mcp_without_the_interpreter_still_logs_the_calls(tmp_path):
    """`--no-interpreter`: no python tool, and the record says python never ran."""
    pytest.importorskip("mcp")
    record_path = tmp_path / "rec.json"
    texts = anyio.run(_mcp_python_calls, ["toy", "guess", "--record", str(record_path),
                                          "--budget", "10", "--no-interpreter"],
                      [{"code": "print(1)"}])
    assert "python" in texts[0]  # an unknown tool: a free error
    record = json.loads(record_path.read_text())
    assert record["details"]["sandbox"]["python_calls"] == 0
    assert record["details"]["sandbox"]["isolation"] is None


# ---- Gymnasium: no python tool ---------------------------------------------------------
def test_gym_offers_no_python_tool():
    """The Gymnasium door's actions are the episode's own tools only (code written for
    the agent view runs in the policy's process on `env.unwrapped.workspace()`), so it
    has no python calls to record. Offering python there means recording it through
    doors/shared/call_log.py, and this test is where to say so."""
    pytest.importorskip("gymnasium")
    from discoverygym.doors.gym import DiscoveryEnv

    env = DiscoveryEnv("toy", task_id="guess", budget=10)
    env.reset(seed=0)
    assert "python" not in env.tool_names


# ---- the shared log itself ----------------------------------------------------------
def test_the_call_log_bounds_what_an_agent_sends():
    log = CallLog()
    deep: object = 0
    for _ in range(10_000):
        deep = [deep]
    log.note("probe", deep, "r", True)                 # too deep for json: named by type
    log.note("probe", {"x": 10**400}, "r" * 10_000_000, True)
    log.note("t" * 10_000, None, "", False)
    first, second, third = log.entries
    assert first["arguments"] == "<list>"
    assert len(second["arguments"]) <= LOG_TEXT_CHARS + 10
    assert len(second["result"]) <= LOG_TEXT_CHARS + 10
    assert len(third["tool"]) < 200
    for _ in range(LOG_LIMIT + 50):
        log.note("probe", {}, "", False)
    assert len(log.entries) == LOG_LIMIT
    details: dict = {}
    log.write(details, None)
    json.dumps(details)  # plain JSON, whatever came in
    assert details["sandbox"]["python_calls"] == 0


def test_the_interpreter_tool_notes_every_python_call():
    """The shared tool (MCP, verifiers and the Harbor sidecar use it) notes each call
    in its log; a door writes the log into the record with `record_calls`."""
    from discoverygym.doors.shared.interpreter_tool import InterpreterTool

    episode = EpisodeSpec("toy", "guess", 0, {"budget": 10}).build()
    tool = InterpreterTool(episode, time_limit_s=30)
    try:
        tool.run("print(6 * 7)")
        details: dict = {}
        tool.record_calls(details)
    finally:
        tool.close()
    [entry] = details["tool_log"]
    assert entry["tool"] == "python" and entry["result"].strip() == "42"
    assert details["sandbox"]["python_calls"] == 1 and details["sandbox"]["isolation"]
