"""The package episode: tools with bad input, scoring by the best attempt, and the
baseline producing a g for every shipped package."""

from __future__ import annotations

import json

import pytest

from discoverygym.core import get_suite
from discoverygym.run import read_records
from discoverygym.suites.packages.shipped import CATALOG


@pytest.fixture()
def episode():
    return get_suite("packages").episode("gravity-force-law")


@pytest.mark.parametrize("tool, args, fragment", [
    ("write_file", {"path": "../../escape.json", "content": "x"}, "outside"),
    ("write_file", {"path": "", "content": "x"}, "file path"),
    ("write_file", {"path": "a.json"}, "'content' is a required property"),
    ("write_file", {"path": 3, "content": "x"}, "is not of type 'string'"),
    ("write_file", {"path": "a.npy", "content": "%%%", "encoding": "base64"},
     "not valid base64"),
    ("write_file", {"path": "a.npy", "content": "x", "encoding": "latin-1"}, "is not one of"),
    ("read_file", {"path": "evaluation/evaluator.py"}, "start with 'data:'"),
    ("read_file", {"path": "data:../evaluation/evaluator.py"}, "outside"),
    ("read_file", {"path": "data:nothing.txt"}, "No file"),
    ("list_files", {"path": "output:nope"}, "No directory"),
    ("evaluate", {"extra": 1}, "Additional properties"),
    ("submit", {"answer": 1.0}, "Additional properties"),
])
def test_bad_input_costs_nothing(episode, tool, args, fragment):
    view = episode.view()
    result = view.call(tool, args)
    assert result.is_error and fragment in result.text
    assert episode.usage.submissions == 0 and not view.done
    assert view.call("list_files", {"path": "data:"}).is_error is False


def test_prompt_and_workspace_hide_the_evaluation(episode):
    view = episode.view()
    text = view.prompt + json.dumps(view.workspace())
    assert str(CATALOG) not in text and "ground_truth" not in text and "evaluator" not in text
    assert "README" in text or "Scientific problem" in text
    files = view.call("list_files", {"path": "data:"}).data["files"]
    assert "README.md" in files and not any("evaluator" in f for f in files)


@pytest.fixture()
def unsplit(tmp_path):
    """gravity-force-law as a published-layout package: no split, its two systems."""
    import shutil

    root = tmp_path / "pkgs" / "gravity-force-law"
    shutil.copytree(CATALOG / "gravity-force-law", root)
    meta = json.loads((root / "metadata.json").read_text())
    meta["performance_entries"] = [{k: v for k, v in e.items() if k != "split"}
                                   for e in meta["performance_entries"]
                                   if e["dataset_name"] != "system_dev"]
    (root / "metadata.json").write_text(json.dumps(meta))
    return get_suite("packages").episode("gravity-force-law", packages=str(root.parent))


def test_best_attempt_counts_and_missing_outputs_fail(unsplit):
    """Without a split (published layout) the best evaluation is the result."""
    episode = unsplit
    view = episode.view()
    view.call("write_file", {"path": "system_1/answer.json", "content": '{"alpha": 0.03}'})
    first = view.call("evaluate", {}).data
    assert first["g"]["system_1"] == pytest.approx(1.0) and first["g"]["system_2"] == -1.0
    view.call("write_file", {"path": "system_1/answer.json", "content": '{"alpha": 9}'})
    view.call("submit", {})
    record = episode.record(agent="t")
    assert record.details["best_attempt"] == 1 and record.value == pytest.approx(0.0)
    assert record.details["attempts"] == 2 and record.passed is True  # g = 0 matches SOTA
    assert record.details["split"].startswith("none")


def test_with_a_split_feedback_is_development_and_the_score_is_held_out(episode):
    view = episode.view()
    assert "system_dev" in view.prompt and "evaluation datasets" in view.prompt
    view.call("write_file", {"path": "system_dev/answer.json", "content": '{"alpha": 0.02}'})
    feedback = view.call("evaluate", {}).data
    assert set(feedback["g"]) == {"system_dev"} and set(feedback["raw_scores"]) == {"system_dev"}
    assert feedback["g"]["system_dev"] == pytest.approx(1.0)
    view.call("submit", {})
    record = episode.record(agent="t")
    # the development instance's g never enters the score: the held-out ones are missing
    assert set(record.details["instance_g"]) == {"system_1", "system_2"}
    assert record.value == -1.0 and record.passed is False
    assert record.details["development_score"] == pytest.approx(1.0)


def test_no_outputs_at_all_is_a_failure():
    episode = get_suite("packages").episode("binary-drag-timescale")
    record = episode.record(agent="idle")
    assert record.passed is False and record.value == -1.0


def test_cli_baseline_run_scores_every_shipped_package(tmp_path):
    """`discoverygym run packages --agent baseline --workers 1`: a valid submission and a
    g for every shipped package; summary.json holds the aggregates; `package validate`
    finds nothing to object to; `package summary` prints the table."""
    from typer.testing import CliRunner

    from discoverygym.cli import app

    shipped = sorted(p.name for p in CATALOG.iterdir() if (p / "metadata.json").exists())
    assert len(shipped) >= 4
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "packages", "--agent", "baseline", "--workers", "1",
                                      "--executor", "serial", "--quiet", "--out", str(out)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    # the run's own table is followed by the NatureBench aggregates
    assert "g against the state of the art" in result.output and "surpass" in result.output
    records = read_records(out / "records.jsonl")
    assert sorted(r["task_id"] for r in records) == shipped
    metadata = {p: json.loads((CATALOG / p / "metadata.json").read_text()) for p in shipped}
    for r in records:
        assert r["details"]["completed"] and r["error"] is None, r["task_id"]
        assert set(r["details"]["instance_g"]) == set(r["details"]["split"]["evaluation"])
        # the SOTA comes from a stronger method: the baseline is below it everywhere
        assert all(g < 0.0 for g in r["details"]["instance_g"].values()), r["task_id"]
        assert r["passed"] is False and -1.0 <= r["score"] == r["details"]["g_clipped"] < 0
        assert r["details"]["validity"]["findings"] == [], r["task_id"]
        # ... and it reproduces the baseline figure frozen in metadata.json
        for entry in metadata[r["task_id"]]["performance_entries"]:
            if entry["split"] == "evaluation":
                (metric,) = [m for m in entry["metrics"] if m["is_primary"]]
                measured = r["details"]["raw_scores"][entry["dataset_name"]][metric["name"]]
                assert measured == pytest.approx(float(metric["baseline_score"]["value"]),
                                                 rel=1e-3), (r["task_id"], entry["dataset_name"])
    summary = json.loads((out / "summary.json").read_text())["suite_summary"]
    assert summary["n_tasks"] == len(shipped) and summary["completion_rate"] == 1.0
    assert set(summary) >= {"surpass_rate", "match_rate", "mean_g", "median_g", "buckets",
                            "per_domain"}
    assert sum(summary["buckets"].values()) == len(shipped)
    validate = CliRunner().invoke(app, ["package", "validate", str(out)],
                                  env={"COLUMNS": "200"})
    assert validate.exit_code == 0, validate.output
    report = json.loads((out / "validity.json").read_text())
    assert report["counts"]["passed_deterministic"] == len(shipped)
    printed = CliRunner().invoke(app, ["package", "summary", str(out)], env={"COLUMNS": "200"})
    assert printed.exit_code == 0 and "surpass" in printed.output and "physics" in printed.output


def test_binary_outputs_through_base64(tmp_path):
    import base64
    import io

    import numpy as np

    episode = get_suite("packages").episode("fluid-vorticity-forecast")
    view = episode.view()
    truth = np.load(CATALOG / "fluid-vorticity-forecast/evaluation/ground_truth/flow_1/"
                    "forecast.npy")
    buffer = io.BytesIO()
    np.save(buffer, truth * 1.1)  # 10 % too strong everywhere: relative error 0.1
    result = view.call("write_file", {"path": "flow_1/forecast.npy", "encoding": "base64",
                                      "content": base64.b64encode(buffer.getvalue()).decode()})
    assert not result.is_error
    view.call("submit", {})
    record = episode.record(agent="t")
    raw = record.details["raw_scores"]
    assert raw["flow_1"]["relative_l2_error"] == pytest.approx(0.1, rel=1e-5)
    assert record.details["instance_g"]["flow_2"] == -1.0 and "missing" in raw["flow_2"]["error"]


def test_an_evaluation_of_nothing_is_not_a_completion():
    episode = get_suite("packages").episode("gravity-force-law")
    view = episode.view()
    view.call("write_file", {"path": "system_1/answer.json", "content": "{broken"})
    assert view.call("submit", {}).is_error is False
    record = episode.record(agent="t")
    assert record.value == -1.0 and record.details["completed"] is False
    assert record.error.startswith("no instance was measured") and "JSON" in record.error
    summary = get_suite("packages").summarize([record.to_dict()])
    assert summary["completion_rate"] == 0.0 and summary["mean_g"] == -1.0


def test_a_wild_answer_is_recorded_clipped():
    """alpha = 9 is thousands of SOTA errors off: the published g says so, g_clipped
    counts it as a failure (-1), and the record's score and the summaries use that."""
    suite = get_suite("packages")
    episode = suite.episode("gravity-force-law")
    view = episode.view()
    view.call("write_file", {"path": "system_1/answer.json", "content": '{"alpha": 9}'})
    view.call("write_file", {"path": "system_2/answer.json", "content": '{"alpha": -0.04}'})
    view.call("submit", {})
    record = episode.record(agent="t").to_dict()
    g, clipped = record["details"]["instance_g"], record["details"]["instance_g_clipped"]
    assert g["system_1"] < -1000 and clipped["system_1"] == -1.0
    assert g["system_2"] == pytest.approx(1.0) == clipped["system_2"]   # exact answer
    assert record["value"] == pytest.approx((g["system_1"] + 1.0) / 2)   # published formula
    assert record["details"]["g_clipped"] == pytest.approx(0.0) == record["score"]
    summary = suite.summarize([record])
    assert summary["mean_g"] == pytest.approx(0.0)
    assert summary["mean_g_published"] == pytest.approx(record["value"])


def test_calibration_agents_on_every_shipped_package(tmp_path):
    """The privileged oracle passes every package (an exact answer: g = +1 on error
    metrics); writing nothing fails uncompleted; a well-formed constant is measured and
    fails. CALIBRATION names only agents that exist."""
    from discoverygym.run import run_episodes
    from discoverygym.suites.packages.baselines import AGENTS, CALIBRATION

    assert set(CALIBRATION) == {"oracle", "baselines", "no_science", "trivial"}
    assert {a for names in CALIBRATION.values() for a in names} <= set(AGENTS)
    specs = get_suite("packages").episodes()
    shipped = len(specs)
    for agent in ("oracle", "empty-outputs", "constant"):
        run_episodes(specs, out_dir=tmp_path / agent, agent=agent, executor="serial",
                     show_progress=False)
        records = read_records(tmp_path / agent / "records.jsonl")
        assert len(records) == shipped
        for r in records:
            if agent == "oracle":
                assert r["passed"] and r["value"] == pytest.approx(1.0), r["task_id"]
                assert r["details"]["privileged_agent"] is True
            else:
                assert not r["passed"] and r["score"] == -1.0, (agent, r["task_id"])
                assert r["details"]["completed"] is (agent == "constant"), r["task_id"]
