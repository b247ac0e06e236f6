"""Every table fits 80 columns without cutting a number or splitting a word (issue 36:
the packages g table showed `tas… sur…` and `-0.…`, mad's skill table `8.327e-…`,
calibrate two `area_swe…` rows, the leaderboard's `--columns all` `gravi` / `ty`)."""

from __future__ import annotations

import json

from rich.console import Console
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core.fit_table import fit_table
from discoverygym.naturegym.format.scoring import BUCKET_LABELS
from discoverygym.suites.mad.suite import MadSuite
from discoverygym.suites.packages.report import aggregate_table


def _render(renderable) -> str:
    console = Console(width=80, record=True, color_system=None)
    with console.capture() as captured:
        console.print(renderable)
    text = captured.get()
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert "…" not in text, text
    return text


def test_packages_g_table_keeps_every_g():
    a = {"n_tasks": 4, "surpass_rate": 0.25, "match_rate": 0.5, "mean_g": -0.123456,
         "median_g": -0.5, "completion_rate": 1.0, "buckets": {b: 1 for b in BUCKET_LABELS}}
    text = _render(aggregate_table({**a, "per_domain": {"physics": a}}, "packages", 80))
    assert "-0.123" in text and "-0.500" in text and "physics" in text
    assert "g_clipped" in text and "not shown at 80 columns" in text


def test_mad_skill_table_keeps_every_digit(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    per_task = {"classical-kappa20": {"n": 10, "metric": "nrmse_positions",
                                      "mean_error": 8.327123e-05, "median_error": 1.234567e-3,
                                      "mean_skill": -0.123456, "median_skill": 0.98765,
                                      "n_missing": 0}}
    text = _render(MadSuite.summary_renderable(MadSuite.__new__(MadSuite),
                                               {"per_task": per_task}))
    for number in ("8.327e-05", "0.001235", "-0.1235", "0.9877"):
        assert number in text, number


def test_look_alike_rows_stay_apart():
    rows = [["area_swept_equal_times", "valid", "3/3", "0/3"],
            ["area_swept_first_half", "weak", "2/3", "1/3"]]
    text = _render(fit_table("calibration", ["task", "verdict", "expert-adaptive",
                                             "constant"], rows, numeric={2, 3}, width=80,
                             keep=2))
    assert "area_swept_equal_times" in text and "area_swept_first_half" in text


def test_a_table_too_wide_leaves_out_whole_columns_and_says_which():
    headers = ["task", *(f"agent number {i}" for i in range(12))]
    rows = [["period", *(f"{i}/3" for i in range(12))]]
    text = _render(fit_table("t", headers, rows, numeric=set(range(1, 13)), width=80))
    assert "not shown at 80 columns" in text and "agent number 11" in " ".join(text.split())


def test_leaderboard_all_columns_splits_no_word(tmp_path):
    recs = [{"suite": s, "task_id": "t", "seed": 0, "options": {}, "agent": a, "model": None,
             "passed": True, "score": 1.0, "details": {}, "usage": {"observations": 1}}
            for s in ("gravity", "stargazer") for a in ("expert-adaptive", "classical")]
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    from discoverygym.run.leaderboard import METRICS, choose_columns, leaderboard, terminal_table

    keys = ["suite", "agent", "model"]
    rows = choose_columns(leaderboard([str(tmp_path)], keys), keys, "all", default=METRICS)
    text = _render(terminal_table(rows, keys, 80))
    assert "gravity" in text and "expert-adaptive" in text and "stargazer" in text
    result = CliRunner().invoke(app, ["leaderboard", str(tmp_path), "--columns", "all"])
    assert result.exit_code == 0 and "expert-adaptive" in result.output
