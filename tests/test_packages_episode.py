"""The package episode: tools with bad input, scoring by the best attempt, and the
baseline producing a g for every shipped package."""

from __future__ import annotations

import json

import pytest

from discoverygym.core import get_suite
from discoverygym.run import read_records, run_episodes
from discoverygym.suites.packages.suite import CATALOG


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


def test_best_attempt_counts_and_missing_outputs_fail(episode):
    view = episode.view()
    view.call("write_file", {"path": "system_1/answer.json", "content": '{"alpha": 0.03}'})
    first = view.call("evaluate", {}).data
    assert first["g"]["system_1"] == pytest.approx(1.0) and first["g"]["system_2"] == -1.0
    view.call("write_file", {"path": "system_1/answer.json", "content": '{"alpha": 9}'})
    view.call("finish", {})
    record = episode.record(agent="t")
    assert record.details["best_attempt"] == 1 and record.value == pytest.approx(0.0)
    assert record.details["attempts"] == 2 and record.passed is True  # g = 0 matches SOTA


def test_no_outputs_at_all_is_a_failure():
    episode = get_suite("packages").episode("binary-drag-timescale")
    record = episode.record(agent="idle")
    assert record.passed is False and record.value == -1.0


def test_baseline_scores_every_shipped_package(tmp_path):
    suite = get_suite("packages")
    specs = suite.plan()
    shipped = sorted(p.name for p in CATALOG.iterdir() if (p / "metadata.json").exists())
    assert sorted(s.task_id for s in specs) == shipped and len(shipped) >= 2
    run_episodes(specs, out_dir=tmp_path, agent="baseline", executor="serial",
                 show_progress=False)
    records = read_records(tmp_path / "records.jsonl")
    assert {r["task_id"] for r in records} == set(shipped)
    for r in records:
        assert r["details"]["completed"] and r["value"] is not None and r["value"] > -1.0
    summary = json.loads((tmp_path / "summary.json").read_text())["suite_summary"]
    assert summary["n_tasks"] == len(shipped) and summary["completion_rate"] == 1.0


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
    data = view.call("evaluate", {}).data
    assert data["raw_scores"]["flow_1"]["relative_l2_error"] == pytest.approx(0.1, rel=1e-5)
    assert data["g"]["flow_2"] == -1.0 and "missing" in data["raw_scores"]["flow_2"]["error"]
    episode.record(agent="t")
