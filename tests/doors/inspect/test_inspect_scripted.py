"""LLM episodes through Inspect AI, driven offline by the scripted policies of the
`discoverygym/<policy>` model provider: the expert passes gravity episodes through
the full react loop, a policy that never submits is recorded as failed, malformed
tool calls get clear errors while the episode goes on, and a cheater's attacks from
inside the sandboxed python tool all fail with the host unharmed."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

import toy_suite
from discoverygym.cli import app
from discoverygym.core import EpisodeRecord, get_suite, paths
from discoverygym.doors.inspect.model_run import parse_model_args, run_model
from discoverygym.run import read_records
from discoverygym.sandbox import SandboxConfig, isolation_level

toy_suite.install()
STRONG = isolation_level() != "rlimits-only"
FAKE_KEY = "sk-test-FAKE-KEY-must-not-leak-0987654321"
# key_id appears only in the records of keyed runs
RECORD_FIELDS = {f.name for f in dataclasses.fields(EpisodeRecord)} - {"key_id"}


def _gravity_specs(tasks: str, worlds: str):
    suite = get_suite("gravity")
    return suite.episodes(**suite.parse_options(
        {"tasks": tasks, "worlds": worlds, "protocol": "budget-obs-100"}))


def _records(out_dir: Path) -> list[dict]:
    return read_records(out_dir / "records.jsonl")


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory):
    """The acceptance command, through the CLI."""
    out = tmp_path_factory.mktemp("expert") / "run"
    result = CliRunner().invoke(app, [
        "run", "gravity", "--model", "discoverygym/expert", "--tasks", "period,eccentricity",
        "--worlds", "A,PM1", "--protocol", "budget-obs-100", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def test_expert_passes_gravity_through_inspect(expert_run):
    records = _records(expert_run)
    got = sorted((r["task_id"], r["options"]["world"]) for r in records)
    assert got == [("eccentricity", "A"), ("eccentricity", "PM1"),
                   ("period", "A"), ("period", "PM1")]
    for r in records:
        assert r["passed"], (r["task_id"], r["options"], r["answer"], r["error"])
        assert set(r) == RECORD_FIELDS  # the schema of scripted runs
        assert r["agent"] == "inspect-react" and r["model"] == "discoverygym/expert"
        assert r["usage"]["input_tokens"] > 0 and r["usage"]["output_tokens"] > 0
        assert r["usage"]["usd"] == 0.0
        assert 0 < r["usage"]["observations"] <= 100  # played under the budget
        tools = [t["tool"] for t in r["details"]["tool_log"]]
        assert tools[0] == "python" and "observe" in tools and tools[-1] == "submit"
        assert r["details"]["sandbox"]["isolation"] == isolation_level()


def test_expert_run_directory(expert_run):
    summary = json.loads((expert_run / "summary.json").read_text())
    assert summary["n_episodes"] == 4 and summary["n_passed"] == 4
    assert summary["pass_rate"] == 1.0 and summary["n_infrastructure_failures"] == 0
    assert summary["total_usage"]["input_tokens"] == sum(
        r["usage"]["input_tokens"] for r in _records(expert_run))
    assert summary["sandbox_isolation"] == [isolation_level()]
    run = json.loads((expert_run / "run.json").read_text())
    assert run["executor"] == "inspect" and run["who"] == "discoverygym/expert"
    assert list((expert_run / "inspect-logs").glob("*.eval"))  # `inspect view` can read it


def test_never_submit_is_recorded_as_failed(tmp_path):
    specs = _gravity_specs("period", "A")
    result = run_model("gravity", specs, model="discoverygym/never-submit",
                       out_dir=tmp_path / "run", extra={"message_limit": 12})
    [record] = result.records
    assert not record["passed"] and record["answer"] is None
    assert "no answer submitted" in record["error"] and "message limit" in record["error"]
    assert result.summary["n_episodes"] == 1 and result.summary["pass_rate"] == 0.0
    assert record["details"]["sandbox"]["python_calls"] >= 3


#: `inspect eval discoverygym/gravity` in a process of its own: Inspect loads its entry
#: points once per process, so in a test worker that other tests shaped first (plugins,
#: hidden modules) the lookup by name could miss the task.
_ENTRY_POINT_EVAL = """
import json, sys
from inspect_ai import eval as inspect_eval
[log] = inspect_eval("discoverygym/gravity", model="discoverygym/malformed",
                     task_args={"tasks": "period", "worlds": "A",
                                "protocol": "budget-obs-100"},
                     log_dir=sys.argv[1], display="none")
[sample] = log.samples
print(json.dumps({
    "status": log.status,
    "record": sample.scores["episode_record"].metadata["record"],
    "tool_errors": sum(1 for m in sample.messages
                       if m.role == "tool" and m.error is not None)}, default=str))
"""


def test_malformed_calls_through_the_entry_point(tmp_path):
    """`inspect eval discoverygym/gravity` (the registered task) with bad tool calls."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _ENTRY_POINT_EVAL, str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "success"
    record = result["record"]
    refused = record["details"]["refused_tool_calls"]
    texts = [r["error"] for r in refused]
    assert any("teleport" in t and "not found" in t for t in texts)
    assert any("parsing" in t.lower() for t in texts)                  # unparsable JSON
    assert any("'code' is a required property" in t for t in texts)
    assert any("'answer' is a required property" in t for t in texts)
    assert any("not of type 'number'" in t for t in texts)
    observe = [t for t in record["details"]["tool_log"] if t["tool"] == "observe"]
    assert len(observe) == 2 and all(t["is_error"] for t in observe)
    assert all("Nothing was charged" in t["result"] for t in observe)
    assert record["usage"]["observations"] == 0
    # The model saw each error as a tool result, and the episode went on to a submission.
    assert result["tool_errors"] == 7
    assert record["answer"] == 2.0 and record["error"] is None


@pytest.mark.filterwarnings("ignore:WEAK SANDBOX")
def test_weak_isolation_is_recorded_loudly(tmp_path):
    result = run_model("toy", get_suite("toy").episodes(range(1)), model="discoverygym/expert",
                       out_dir=tmp_path / "run",
                       sandbox=SandboxConfig(isolation="rlimits-only"))
    [record] = result.records
    assert record["passed"]
    sandbox = record["details"]["sandbox"]
    assert sandbox["isolation"] == "rlimits-only" and "WEAK SANDBOX" in sandbox["warning"]
    assert result.summary["sandbox_isolation"] == ["rlimits-only"]


@pytest.mark.skipif(not STRONG, reason="no namespace isolation on this host")
def test_cheater_attempts_all_fail(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    secret = paths.cache_dir("gravity", "stolen") / "truth.json"
    secret.write_text('{"period_s": 12345.678}')
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("secret run notes")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    try:
        result = run_model("gravity", _gravity_specs("period", "A"),
                           model="discoverygym/cheater", out_dir=out,
                           model_args=parse_model_args([f"port={port}", f"runs={out}"]),
                           sandbox=SandboxConfig(time_limit_s=3.0))
        server.setblocking(False)
        with pytest.raises(BlockingIOError):  # nobody knocked on the host's port
            server.accept()
    finally:
        server.close()
    [record] = result.records
    log = [t for t in record["details"]["tool_log"] if t["tool"] == "python"]
    outcomes = [t["outcome"] for t in log]
    assert len(log) == 11, outcomes
    assert "cache files: []" in log[0]["result"] and "12345" not in json.dumps(record)
    assert outcomes[1:5] == ["FileNotFoundError", "FileNotFoundError", "FileNotFoundError",
                             "ModuleNotFoundError"]
    assert str(out) in log[2]["arguments"]  # the very run directory being written
    assert "keys: {} proc: []" in log[5]["result"] and FAKE_KEY not in json.dumps(record)
    assert outcomes[6] in ("OSError", "ConnectionRefusedError", "TimeoutError")
    assert outcomes[7] == "socket.gaierror"
    # Two defences may stop the fork bomb, depending on timing: the process limit
    # (fork fails inside the sandbox), or the supervisor, which counts the sandbox's
    # processes while the call runs and restarts the interpreter when over the limit.
    fork = log[8]
    if fork.get("restarted"):
        assert fork["outcome"] == "MemoryError" and "processes, over its limit" in fork["result"]
    else:
        assert "fork stopped after" in fork["result"], fork
        assert int(fork["result"].split("after")[1].split()[0]) < 100
    assert outcomes[9] == "MemoryError"
    assert outcomes[10] == "timeout" and log[10].get("restarted")
    sandbox = record["details"]["sandbox"]
    expected = (["limit"] if fork.get("restarted") else []) + ["timeout"]
    assert [e["event"] for e in sandbox["events"]] == expected
    assert sandbox["restarts"] == len(expected)
    # The episode still ended normally (a wrong guess), and the host is unharmed.
    assert record["answer"] == 0.0 and not record["passed"]
    assert os.environ["OPENAI_API_KEY"] == FAKE_KEY and secret.exists()


def test_a_model_that_stops_working_ends_the_episode(tmp_path):
    """The expert policy has nothing to say about tpbench: after a few replies
    without a tool call the episode ends, recorded as failed with the reason."""
    specs = get_suite("tpbench").episodes()[:1]
    result = run_model("tpbench", specs, model="discoverygym/expert", out_dir=tmp_path / "run")
    [record] = result.records
    assert not record["passed"] and record["answer"] is None
    assert "without calling a tool" in record["error"]
    assert record["details"]["tool_log"] == []


def test_expert_full_obs(tmp_path):
    """Full observation: the whole table is in the interpreter's `df` from the start."""
    suite = get_suite("gravity")
    specs = suite.episodes(**suite.parse_options(
        {"tasks": "eccentricity", "worlds": "PM1", "protocol": "full-obs"}))
    [record] = run_model("gravity", specs, model="discoverygym/expert",
                         out_dir=tmp_path / "run").records
    assert record["passed"], (record["answer"], record["error"])
    assert [t["tool"] for t in record["details"]["tool_log"]] == ["python", "python", "submit"]


def test_tpbench_holistic_grade_through_the_grader_role(tmp_path):
    """`--grader-model` binds Inspect's grader role: the written solution gets an A-D
    grade beside the verdict, the grader's tokens are not the agent's, and a run
    without a grader leaves the grade empty."""
    graded, plain = tmp_path / "graded", tmp_path / "plain"
    for out, extra in ((graded, ["--grader-model", "discoverygym/grader"]), (plain, [])):
        result = CliRunner().invoke(app, [
            "run", "tpbench", "--model", "discoverygym/stub-solution", "--level", "1",
            "--limit", "2", "--out", str(out), "--quiet", *extra])
        assert result.exit_code == 0, result.output
    with_grade = _records(graded)
    assert len(with_grade) == 2
    # the stub's function returns 0.0: wrong everywhere, so the stand-in grades D
    for r in with_grade:
        assert not r["passed"] and r["details"]["verdict"] in ("wrong", "error")
        assert r["details"]["holistic_grade"] == "D", r["details"]
        assert r["details"]["holistic_grader"] == "discoverygym/grader"
        assert r["details"]["grader_usage"]["output_tokens"] > 0
    without = {r["task_id"]: r for r in _records(plain)}
    for r in with_grade:
        assert without[r["task_id"]]["details"]["holistic_grade"] is None
        assert "holistic_grader" not in without[r["task_id"]]["details"]
        # the same conversation, so the same agent tokens with or without the grader
        assert r["usage"]["input_tokens"] == without[r["task_id"]]["usage"]["input_tokens"]
    refused = CliRunner().invoke(app, ["run", "tpbench", "--agent", "reference",
                                       "--grader-model", "discoverygym/grader",
                                       "--out", str(tmp_path / "x")])
    assert refused.exit_code == 1 and "--model" in refused.output


def test_grader_stand_in_reads_the_verdict():
    """The grading prompt carries the verification verdict: a correct reference
    solution is graded A by the stand-in, and the grade lands in the record."""
    from discoverygym.doors.inspect.policies import Context, grader, next_step

    suite = get_suite("tpbench")
    episode = suite.episode("well-position-spread")
    assert episode.grader_prompt() is None  # nothing to grade before a submission
    problem = episode.calibration_problem()
    episode.call("submit", {"solution": problem.reference_solution_text()})
    prompt = episode.grader_prompt()
    assert "## Automatic verification\ncorrect" in prompt
    reply = next_step(grader, Context(prompt=prompt, tools=[]), []).text
    episode.record_grade(reply, "stand-in")
    record = episode.record(agent="test")
    assert record.passed and record.details["holistic_grade"] == "A"
    episode2 = suite.episode("well-position-spread")
    episode2.call("submit", {"solution": "no code here"})
    episode2.record_grade("I cannot decide.", "stand-in")
    details = episode2.record(agent="test").details
    assert details["holistic_grade"] is None and "no grade" in details["holistic_grade_error"]


def test_visual_observations_reach_the_model_as_images(tmp_path, monkeypatch):
    """mad's visual variant: the measurement's PNG arrives in the model's conversation
    as an image block, and no measured number comes with it."""
    import base64
    import io

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessageTool
    from inspect_ai.tool import ContentImage
    from PIL import Image

    from discoverygym.doors.inspect import policies
    from discoverygym.doors.inspect.task import suite_task

    def look_once(ctx):
        yield policies.tool("measure", t=1.0, what=[0, 1], fidelity="high")
        yield policies.Step(text="I have looked.")

    monkeypatch.setitem(policies.POLICIES, "look-once", look_once)
    suite = get_suite("mad")
    specs = suite.episodes([0], **suite.parse_options({"world": "classical", "law": "normal",
                                                   "variant": "visual",
                                                   "t_max": "5", "query_horizon": "2"}))
    [log] = inspect_eval(suite_task(suite, specs), model="discoverygym/look-once",
                         log_dir=str(tmp_path), display="none")
    [sample] = log.samples
    [reply] = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
    images = [c for c in reply.content if isinstance(c, ContentImage)]
    assert len(images) == 1
    data_uri = images[0].image  # the log keeps large blobs as attachments
    if data_uri.startswith("attachment://"):
        data_uri = sample.attachments[data_uri.removeprefix("attachment://")]
    assert data_uri.startswith("data:image/png;base64,")
    png = base64.b64decode(data_uri.split(",", 1)[1])
    assert Image.open(io.BytesIO(png)).size == (512, 512)
    assert "values" not in reply.text
    record = sample.scores["episode_record"].metadata["record"]
    assert record["passed"] is False and "no answer" in record["error"]


def test_hostile_arguments_through_inspect_are_short_free_errors(tmp_path):
    """Oversized, over-deep and out-of-range arguments through Inspect's own tool-call
    parsing and our tools: every reply the model sees is short, nothing is charged, and
    the valid answer that follows ends the episode in a record."""
    from inspect_ai import eval as inspect_eval

    from discoverygym.doors.inspect.task import suite_task

    # The Task itself, not its registered name: a name lookup depends on when in this
    # process Inspect loaded our entry point, relative to toy_suite.install()
    # (the lookup by name has a test of its own, in a fresh process).
    [log] = inspect_eval(suite_task("toy"), model="discoverygym/hostile", limit=1,
                         log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples
    record = sample.scores["episode_record"].metadata["record"]
    tool_messages = [m for m in sample.messages if m.role == "tool"]
    assert len(tool_messages) == 5
    for message in tool_messages[:4]:
        shown = message.text + (message.error.message if message.error else "")
        assert message.error is not None or "Invalid input" in shown, shown[:300]
        assert len(shown) < 2000, shown[:300]
    assert record["answer"] == 50.0 and record["error"] is None
    # Inspect refused three before our tools saw them; they count as the episode's
    # tool errors all the same, as over MCP and Gym.
    assert record["usage"]["observations"] == 0 and record["usage"]["tool_errors"] == 4
