"""`discoverygym package summary RUN --naturebench OUT` writes a NatureBench submission
that their unmodified validate_submission.py accepts and whose figures their
compute_scores.py reproduces (both vendored under tests/data/naturebench)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_packages_naturebench import CLASSIFY, FLUX, PACKAGES, correct_outputs
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core import get_suite
from discoverygym.suites.packages.naturebench import (
    SubmissionError,
    case_result,
    write_submission,
)
from testpaths import TESTS

NB = TESTS / "data" / "naturebench"


def play(packages: Path, case: str, attempts: list[dict[str, str]], protocol: str) -> dict:
    ep = get_suite("packages").episode(case, packages=str(packages), protocol=protocol)
    view = ep.view()
    for files in attempts:
        for path, text in files.items():
            view.call("write_file", {"path": path, "content": text})
        view.call("evaluate", {})
    view.call("submit", {})
    return json.loads(ep.record(agent="scripted", model="none").to_json())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run of four cases by NatureBench's rules: a scored, a never-evaluated, an
    all-malformed (scored -1) and a twice-evaluated case, two domains."""
    root = tmp_path_factory.mktemp("nbrun")
    packages = root / "packages"
    for name, source in (("bio-good", CLASSIFY), ("bio-idle", CLASSIFY),
                         ("phys-malformed", FLUX), ("phys-improving", FLUX)):
        shutil.copytree(PACKAGES / source, packages / name)
    good_a, good_b = correct_outputs(CLASSIFY), correct_outputs(FLUX)
    noisy_b = {k: json.dumps([v + 0.3 for v in json.loads(t)]) for k, t in good_b.items()}
    records = [
        play(packages, "bio-good", [good_a], "naturebench"),
        play(packages, "bio-idle", [], "naturebench"),
        play(packages, "phys-malformed", [{"site_a/flux.json": "x", "site_b/flux.json": "[]"}],
             "naturebench"),
        play(packages, "phys-improving", [noisy_b, good_b], "naturebench"),
    ]
    run = root / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def their(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(NB / script), *args], cwd=NB,
                          capture_output=True, text=True, timeout=120)


def test_their_scripts_accept_and_reproduce_the_submission(run_dir, tmp_path):
    out = tmp_path / "submission"
    result = CliRunner().invoke(app, [
        "package", "summary", str(run_dir), "--naturebench", str(out),
        "--url", "https://example.org/agent", "--contact", "me@example.org"],
        env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "NatureBench figures" in result.output and "SR 75.00%" in result.output
    cases = ["--case-metadata", str(out / "case_metadata.csv")]
    check = their("validate_submission.py", "--metadata", str(out / "submission.yaml"),
                  "--results", str(out / "results.csv"), "--raw-results",
                  str(out / "raw-results"), *cases)
    assert check.returncode == 0, check.stdout + check.stderr
    report = tmp_path / "score_report.json"
    scores = their("compute_scores.py", "--results", str(out / "results.csv"),
                   "--output", str(report), *cases)
    assert scores.returncode == 0, scores.stdout + scores.stderr
    theirs = json.loads(report.read_text())
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    ours = write_submission(records, tmp_path / "again")
    assert ours == theirs
    overall = theirs["overall"]
    # bio-idle never evaluated: no score; phys-malformed: scored -1 by their rules
    assert overall["scored_count"] == 3 and overall["no_score_count"] == 1
    assert overall["score_rate"] == 75.0 and set(theirs["domains"]) == {"Biology", "Physics"}
    lines = (out / "raw-results" / "phys-improving" / "submissions.jsonl").read_text()
    assert len(lines.splitlines()) == 2, "the whole attempt history is kept"


def test_figures_match_the_run_summary(run_dir, tmp_path):
    """Their mean g over all tasks is our mean g_clipped with invalid runs at -1 (what
    `package validate` reports) whenever no valid g is below -1, as here; their
    completion rate counts valid scored tasks."""
    import statistics

    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    figures = write_submission(records, tmp_path / "s")
    summary = get_suite("packages").summarize(records)
    valid = [not r["details"]["validity"]["findings"] for r in records]
    ours = [r["details"]["g_clipped"] if ok and r["details"]["completed"] else -1.0
            for r, ok in zip(records, valid, strict=True)]
    assert figures["overall"]["mean_g_all"] == pytest.approx(statistics.fmean(ours), abs=1e-6)
    assert summary["completion_rate"] == 0.75  # three of four scored (their SR)
    assert figures["overall"]["score_rate"] == 100 * summary["completion_rate"]
    assert figures["overall"]["invalid_count"] == 1  # the byte-for-byte copy of the truth


@pytest.mark.parametrize("task_id", ["../escape", "a/b", "..", "", "x" * 300, None, 7])
def test_hostile_case_ids_are_refused(task_id):
    with pytest.raises(SubmissionError):
        case_result({"suite": "packages", "task_id": task_id, "details": {}})


def test_hostile_records_never_crash(tmp_path):
    records = [{"suite": "packages", "task_id": "odd", "value": float("nan"),
                "details": {"attempt_history": [{"ok": True, "aggregate_g": 1e400},
                                                "junk", {"ok": True, "aggregate_g": True}],
                            "validity": {"findings": ["=cmd|' /C calc'!A0\n" * 50]},
                            "completed": True}}]
    figures = write_submission(records, tmp_path / "s")
    assert figures["overall"]["no_score_count"] == 1
    assert "\n" not in (tmp_path / "s" / "results.csv").read_text().splitlines()[1]
    with pytest.raises(SubmissionError):
        write_submission(records, tmp_path / "s")  # the folder exists
    with pytest.raises(SubmissionError):
        write_submission(records * 2, tmp_path / "t")  # one row per case


def test_summary_prints_their_figures_without_writing(run_dir, tmp_path):
    result = CliRunner().invoke(app, ["package", "summary", str(run_dir)],
                                env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "NatureBench figures" in result.output and "SR 75.00%" in result.output
    assert "median g (valid)" in result.output and "Biology" in result.output
    assert "submission:" not in result.output


def test_cli_errors_are_one_line(run_dir, tmp_path):
    (tmp_path / "taken").mkdir()
    result = CliRunner().invoke(app, ["package", "summary", str(run_dir), "--naturebench",
                                      str(tmp_path / "taken")])
    assert result.exit_code == 1 and "exists" in result.output
    assert "Traceback" not in result.output
