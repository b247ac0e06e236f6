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

pytest.importorskip("verifiers.v1")

import toy_suite  # noqa: E402
from discoverygym.core import get_suite, register_agents  # noqa: E402
from discoverygym.run import run_episodes  # noqa: E402
from fake_chat_server import FakeChat  # noqa: E402
from test_door_parity import FIELDS, USAGE, _direct, drive, report  # noqa: E402

pytestmark = pytest.mark.slow
toy_suite.install()
TESTS = Path(__file__).parent
KEY_VAR = "FAKE_CHAT_KEY"


class ParityAgent:
    """The parity policy as a scripted agent, for `discoverygym run`'s runner."""

    def solve(self, view) -> None:
        drive(lambda name, args: view.call(name, args).text)


register_agents("toy", {"parity": "test_verifiers_rollout:ParityAgent"})


MODELS = ["parity", "python", "hostile", "silent", "status-500", "status-429"]


@pytest.fixture(scope="module")
def chat_server():
    from discoverygym.adapters.verifiers_env.launch import helper_ready

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


def _rollouts(server: FakeChat, tmp: Path,
              runs: dict[str, list[str]]) -> dict[str, list[dict[str, Any]]]:
    """One `discoverygym` command per name (in parallel), each pointed at the scripted
    server and its own output folder. Returns each run's traces."""
    path = [str(TESTS), *(str(Path(p).resolve()) for p in
                          os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env = {**os.environ, KEY_VAR: "sk-fake", "DISCOVERYGYM_PLUGINS": "toy_suite",
           "PYTHONPATH": os.pathsep.join(path)}
    procs = {name: subprocess.Popen(
        [sys.executable, "-m", "discoverygym.cli", *argv, "--base-url", server.base_url,
         "--api-key-var", KEY_VAR, "--out", str(tmp / name)],
        env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, argv in runs.items()}
    traces = {}
    for name, proc in procs.items():
        output, _ = proc.communicate(timeout=400)
        assert proc.returncode == 0, output[-3000:]
        [path] = (tmp / name).glob("*/traces.jsonl")
        traces[name] = [trace for line in path.read_text().splitlines()
                        for trace in json.loads(line)["traces"]]
    return traces


@pytest.fixture(scope="module")
def traces(chat_server, tmp_path_factory) -> dict[str, list[dict[str, Any]]]:
    """Every scripted model's rollout (the first training episode of the toy suite: seed
    0, as in tests/test_door_parity.py) and the docs' example, played once for the
    module, all at once."""
    runs = {model: ["rl", "eval", "toy", "--split", "train", "-n", "1", "--model", model]
            for model in MODELS}
    example = _doc_example()
    assert "--base-url" in example and "--model" in example
    drop = {"--base-url", "--model"}  # the docs' endpoint is replaced by ours
    kept = [a for i, a in enumerate(example) if a not in drop and example[i - 1] not in drop]
    runs["docs"] = [*kept, "--model", "silent"]
    return _rollouts(chat_server, tmp_path_factory.mktemp("rollouts"), runs)


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
    runner = run_episodes([get_suite("toy").plan()[0]], out_dir=tmp_path / "runner",
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
        assert not trace["ok"] and not trace["rewards"]
        assert any(status in (e.get("message") or "") for e in trace["errors"]), trace["errors"]


def test_the_docs_example_runs_a_gravity_rollout(traces):
    records = [trace["info"]["record"] for trace in traces["docs"]]
    assert sorted((r["suite"], r["task_id"], r["world"], r["protocol"]) for r in records) == [
        ("gravity", "period", "A", "budget-obs-100"), ("gravity", "period", "B", "budget-obs-100")]
    assert all(r["seed"] >= 1_000_000 and not r["passed"] for r in records)  # held out
