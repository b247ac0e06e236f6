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
from test_door_parity import FIELDS, USAGE, _direct, drive  # noqa: E402

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


def _rollouts(server: FakeChat, tmp: Path, models: list[str]) -> dict[str, dict[str, Any]]:
    """One rollout per model (in parallel): the first training episode of the toy suite
    (seed 0, as in tests/test_door_parity.py). Returns each model's trace."""
    path = [str(TESTS), *(str(Path(p).resolve()) for p in
                          os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env = {**os.environ, KEY_VAR: "sk-fake", "DISCOVERYGYM_PLUGINS": "toy_suite",
           "PYTHONPATH": os.pathsep.join(path)}
    runs = {model: subprocess.Popen(
        [sys.executable, "-m", "discoverygym.cli", "rl", "eval", "toy", "--split", "train",
         "-n", "1", "--model", model, "--base-url", server.base_url, "--api-key-var",
         KEY_VAR, "--out", str(tmp / model)],
        env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for model in models}
    traces = {}
    for model, run in runs.items():
        output, _ = run.communicate(timeout=400)
        assert run.returncode == 0, output[-3000:]
        [path] = (tmp / model).glob("*/traces.jsonl")
        [line] = path.read_text().splitlines()
        [trace] = json.loads(line)["traces"]
        traces[model] = trace
    return traces


@pytest.fixture(scope="module")
def traces(chat_server, tmp_path_factory) -> dict[str, dict[str, Any]]:
    """Every scripted model's rollout, played once for the module, all at once."""
    return _rollouts(chat_server, tmp_path_factory.mktemp("rollouts"), MODELS)


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    return {**{k: record[k] for k in FIELDS}, **{k: record["usage"][k] for k in USAGE}}


def test_the_parity_policy_through_verifiers_leaves_the_record_of_every_door(traces,
                                                                            tmp_path):
    trace = traces["parity"]
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
    assert trace["metrics"]["observations"] == record["usage"]["observations"] == 8
    assert "truth" not in json.dumps([n["message"] for n in trace["nodes"]])


def test_the_python_tool_runs_in_its_sandbox_during_a_rollout(traces):
    replies = [n["message"]["content"] for n in traces["python"]["nodes"]
               if n["message"]["role"] == "tool"]
    assert replies[0].strip() == "42", replies
    assert traces["python"]["info"]["record"]["usage"]["tool_calls"] == 1  # the submit


def test_a_hostile_model_leaves_failed_rollouts_with_reasons(traces):
    hostile = traces["hostile"]
    record = hostile["info"]["record"]
    assert hostile["ok"] and hostile["rewards"]["episode_score"]["score"] == 0.0
    assert not record["passed"] and record["error"] == "the rollout ended without an answer"
    assert record["usage"]["tool_errors"] == record["usage"]["tool_calls"] == 4
    assert record["usage"]["observations"] == 0
    replies = [n["message"]["content"] for n in hostile["nodes"]
               if n["message"]["role"] == "tool"]
    assert len(replies) == 4 and all("Nothing was charged" in r and len(r) < 700
                                     for r in replies)
    silent = traces["silent"]["info"]["record"]
    assert not silent["passed"] and silent["usage"]["tool_calls"] == 0
    assert silent["error"] == "the rollout ended without an answer"
    for status in ("500", "429"):
        trace = traces[f"status-{status}"]
        assert not trace["ok"] and not trace["rewards"]
        assert any(status in (e.get("message") or "") for e in trace["errors"]), trace["errors"]
