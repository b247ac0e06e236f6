"""Whole rollouts through verifiers, offline: `discoverygym rl eval` runs `vf-eval` (the
subprocess runtime, the chat harness, the interception server, our tool server in its
own process) against a scripted OpenAI-compatible server on 127.0.0.1.

The parity policy leaves the same record as on the other doors and the reward is the
record's score, which is the score `discoverygym run`'s runner gives the same policy;
a hostile model (unreadable arguments, unknown tools, no tool call, 500 and 429 replies)
leaves failed rollouts that say why."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from testpaths import TESTS

pytest.importorskip("verifiers.v1")

import toy_suite  # noqa: E402
from discoverygym.core import get_suite, register_agents  # noqa: E402
from discoverygym.run import run_episodes  # noqa: E402
from door_parity_policy import FIELDS, USAGE, _direct, drive, report  # noqa: E402
from fake_chat_server import FakeChat  # noqa: E402

pytestmark = pytest.mark.slow
toy_suite.install()
KEY_VAR = "FAKE_CHAT_KEY"


class ParityAgent:
    """The parity policy as a scripted agent, for `discoverygym run`'s runner."""

    def solve(self, view) -> None:
        drive(lambda name, args: view.call(name, args).text)


register_agents("toy", {"parity": "test_verifiers_rollout:ParityAgent"})


MODELS = ["parity", "python", "hostile", "silent", "status-500", "status-429", "same-id",
          "reused-deep"]


@pytest.fixture(scope="module")
def chat_server():
    from discoverygym.doors.verifiers.launch import helper_ready

    if not helper_ready():
        pytest.fail("the chat harness's helper is not installed: run `discoverygym rl "
                    "setup` (`make test-rl` does) before these tests")
    server = FakeChat()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def _doc_example() -> list[str]:
    """The `discoverygym rl eval` command of docs/doors.md, as a user would paste it."""
    text = (TESTS.parent / "docs" / "doors.md").read_text()
    section = text.split("## verifiers, for RL", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    [line] = [ln for ln in block.splitlines() if " rl eval " in ln]
    return shlex.split(line.split("discoverygym ", 1)[1])


def _env(**extra: str) -> dict[str, str]:
    path = [str(TESTS), *(str(Path(p).resolve()) for p in
                          os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {**os.environ, KEY_VAR: "sk-fake", "DISCOVERYGYM_PLUGINS": "toy_suite",
            "PYTHONPATH": os.pathsep.join(path), **extra}


def _rl(server: FakeChat, tmp: Path, argv: list[str], **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "discoverygym.cli", *argv, "--base-url", server.base_url,
         "--api-key-var", KEY_VAR, "--out", str(tmp)],
        env=_env(**env), cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Run:
    """One `discoverygym rl eval`: its exit status, its output and its traces."""

    def __init__(self, proc: subprocess.Popen, out: Path) -> None:
        self.output, _ = proc.communicate(timeout=1200)  # 2 cores, ten runs at once
        self.returncode = proc.returncode
        self.traces = [trace for path in out.glob("*/traces.jsonl")
                       for line in path.read_text().splitlines()
                       for trace in json.loads(line)["traces"]]


def _rollouts(server: FakeChat, tmp: Path, runs: dict[str, list[str]],
              env: dict[str, dict[str, str]] | None = None) -> dict[str, Run]:
    """One `discoverygym` command per name (in parallel), each pointed at the scripted
    server and its own output folder."""
    procs = {}
    for name, argv in runs.items():
        (tmp / name).mkdir(parents=True)
        procs[name] = _rl(server, tmp / name, argv, **(env or {}).get(name, {}))
    return {name: Run(proc, tmp / name) for name, proc in procs.items()}


@pytest.fixture(scope="module")
def runs(chat_server, tmp_path_factory) -> dict[str, Run]:
    """Every scripted model's rollout (the first training episode of the toy suite: seed
    0, as in tests/doors/test_door_parity.py) and the docs' example, played once for the
    module, all at once."""
    runs = {model: ["rl", "eval", "toy", "--split", "train", "-n", "1", "--model", model]
            for model in MODELS}
    example = _doc_example()
    assert "--base-url" in example and "--model" in example
    drop = {"--base-url", "--model"}  # the docs' endpoint is replaced by ours
    kept = [a for i, a in enumerate(example) if a not in drop and example[i - 1] not in drop]
    runs["docs"] = [*kept, "--model", "silent"]
    runs["broken-tools"] = [*runs["parity"][:-1], "parity"]
    played = _rollouts(chat_server, tmp_path_factory.mktemp("rollouts"), runs,
                       env={"broken-tools": {toy_suite.BROKEN_TOOL_SERVER: "1"}})
    return played


@pytest.fixture(scope="module")
def traces(runs) -> dict[str, list[dict[str, Any]]]:
    return {name: run.traces for name, run in runs.items()}


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    return {**{k: record[k] for k in FIELDS}, **{k: record["usage"][k] for k in USAGE}}


def test_the_parity_policy_through_verifiers_leaves_the_record_of_every_door(traces,
                                                                            tmp_path):
    [trace] = traces["parity"]
    assert trace["ok"] and trace["stop_condition"] == "episode_over", trace["errors"]
    record = trace["info"]["record"]
    assert record["seed"] == 0 and record["agent"] == "verifiers"
    assert trace["rewards"]["episode_score"]["score"] == record["score"]
    assert _summary(record) == _summary(_direct())
    runner = run_episodes([get_suite("toy").episodes()[0]], out_dir=tmp_path / "runner",
                          agent="parity", executor="serial", show_progress=False)
    [by_runner] = runner.records
    assert record["score"] == by_runner["score"] == 1.0
    assert _summary(record) == _summary(by_runner)
    report("runner", by_runner)
    report("verifiers", record)
    assert trace["metrics"]["observations"] == record["usage"]["observations"] == 8
    assert "truth" not in json.dumps([n["message"] for n in trace["nodes"]])


def test_the_python_tool_runs_in_its_sandbox_during_a_rollout(traces):
    [trace] = traces["python"]
    replies = [n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "tool"]
    assert replies[0].strip() == "42", replies
    assert trace["info"]["record"]["usage"]["tool_calls"] == 1  # the submit


def test_a_hostile_model_leaves_failed_rollouts_with_reasons(traces):
    [hostile] = traces["hostile"]
    record = hostile["info"]["record"]
    assert hostile["ok"] and hostile["rewards"]["episode_score"]["score"] == 0.0
    assert not record["passed"] and record["error"] == "the rollout ended without an answer"
    assert record["usage"]["tool_errors"] == record["usage"]["tool_calls"] == 4
    assert record["usage"]["observations"] == 0
    replies = [n["message"]["content"] for n in hostile["nodes"]
               if n["message"]["role"] == "tool"]
    assert len(replies) == 4 and all("Nothing was charged" in r and len(r) < 700
                                     for r in replies)
    silent = traces["silent"][0]["info"]["record"]
    assert not silent["passed"] and silent["usage"]["tool_calls"] == 0
    assert silent["error"] == "the rollout ended without an answer"
    for status in ("500", "429"):
        [trace] = traces[f"status-{status}"]
        assert not trace["ok"]
        assert any(status in (e.get("message") or "") for e in trace["errors"]), trace["errors"]


@pytest.mark.parametrize("model", ["status-500", "status-429", "same-id", "broken-tools"])
def test_an_errored_rollout_leaves_a_failed_record_and_reward_0_and_exits_1(runs, model):
    """An errored rollout had no reward and no record, so vf-eval's mean left it out: a
    model that passed half and crashed the rest averaged 1.0. Now it is a failed record
    with the cause, reward 0, counted in the summary; the command exits 1. Two calls
    with one id in a turn (verifiers refuses the turn) and a tool server that cannot
    build its episode are such errors; the latter fails in seconds, not three minutes."""
    run = runs[model]
    [trace] = run.traces
    record = trace["info"]["record"]
    assert not trace["ok"] and trace["rewards"]["episode_score"]["score"] == 0.0
    assert not record["passed"] and record["score"] == 0.0 and record["seed"] == 0
    assert "the rollout ended in an error: " in record["error"]
    assert trace["metrics"]["passed"] == 0.0
    assert run.returncode == 1, run.output[-3000:]
    table = run.output.splitlines()
    assert table[table.index(next(t for t in table if t.split()[:1] == ["rollouts"])) + 1
                 ].split() == ["1", "0.000", "0", "1"]
    assert any(line.startswith("errored: ") for line in table)
    if model == "same-id":
        assert "reused" in record["error"]
    if model == "broken-tools":
        assert record["error"].startswith("the episode's tool server could not start: "
                                          "RuntimeError: the toy simulator is broken")
        # verifiers waited 180 s for a server that died in setup; on 2 loaded cores a
        # whole rollout takes about a minute
        setup = trace["timing"]["setup"]
        assert setup["end"] - setup["start"] < 170


def test_a_reused_id_with_5000_deep_arguments_ends_the_rollout_not_crashes_it(traces):
    """It crashed the rollout (verifiers could not decode the turn's arguments): no
    record, no reward. Now the turn becomes text and the episode fails without an
    answer."""
    [trace] = traces["reused-deep"]
    record = trace["info"]["record"]
    assert trace["ok"], trace["errors"]
    last = [n["message"] for n in trace["nodes"] if n["message"]["role"] == "assistant"][-1]
    assert "nest deeper than 200 levels" in last["content"] and not last.get("tool_calls")
    assert trace["rewards"]["episode_score"]["score"] == 0.0 and not record["passed"]
    assert record["error"] == "the rollout ended without an answer"
    assert record["usage"]["observations"] == 1


def test_a_run_prints_a_summary_not_traces_and_exits_0(runs):
    run = runs["parity"]
    assert run.returncode == 0, run.output[-3000:]
    assert '"nodes"' not in run.output and len(run.output.splitlines()) < 60
    table = run.output.splitlines()
    row = table[table.index(next(t for t in table if t.split()[:1] == ["rollouts"])) + 1]
    assert row.split() == ["1", "1.000", "1", "0"]


def test_a_chat_server_that_does_not_stream_is_refused_up_front(chat_server, tmp_path):
    proc = _rl(chat_server, tmp_path, ["rl", "eval", "toy", "--split", "train", "-n", "1",
                                       "--model", "no-stream"])
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "does not stream" in output
    assert len(output.strip().splitlines()) == 1 and "Traceback" not in output
    assert not list(tmp_path.glob("*/traces.jsonl"))


def test_the_docs_example_runs_a_gravity_rollout(traces):
    records = [trace["info"]["record"] for trace in traces["docs"]]
    assert sorted((r["suite"], r["task_id"], r["world"], r["protocol"]) for r in records) == [
        ("gravity", "period", "A", "budget-obs-100"), ("gravity", "period", "B", "budget-obs-100")]
    assert all(r["seed"] >= 1_000_000 and not r["passed"] for r in records)  # held out
