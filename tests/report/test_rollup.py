"""A suite with many tasks rolls its per-task tables up (issue 36: stargazer's run table
and report had 120 task rows and no per-tier figures)."""

from __future__ import annotations

import json

from discoverygym.cli import print_summary_table
from discoverygym.cli_args import console
from discoverygym.core import get_suite
from discoverygym.core.suite import ROLLUP_OVER, rollup_labels
from discoverygym.report.html import build_report
from discoverygym.run.summary import summarize_records


def _records():
    tasks = get_suite("stargazer").tasks()
    return [{"suite": "stargazer", "task_id": t.id, "seed": 0, "options": {},
             "agent": "a", "model": None, "passed": t.tags["tier"] == "easy", "score": 0.5,
             "details": {"tier": t.tags["tier"]}, "usage": {"observations": 3}}
            for t in tasks]


def test_stargazer_tasks_roll_up_by_tier():
    records = _records()
    assert len(records) > ROLLUP_OVER
    labels = rollup_labels(get_suite("stargazer"), [r["task_id"] for r in records])
    assert set(labels.values()) == {"easy", "medium", "hard", "real"}
    assert rollup_labels(get_suite("stargazer"), [r["task_id"] for r in records[:5]]) is None


def test_the_run_table_shows_tiers_not_120_tasks():
    records = _records()
    summary = summarize_records(records)
    labels = rollup_labels(get_suite("stargazer"), summary["per_task"])
    with console.capture() as captured:
        print_summary_table(summary, "stargazer", labels)
    text = captured.get()
    assert "easy-000" not in text and "easy" in text and "hard" in text
    assert f"{len(records)} tasks rolled up" in text
    n_easy = sum(r["passed"] for r in records)
    assert f"{n_easy}" in text


def test_the_report_rolls_up_too(tmp_path):
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _records()))
    html = build_report(tmp_path)
    assert "By tier" in html and "tasks rolled up" in html
    assert ">easy-000<" not in html.split("By tier")[1].split("<h2>")[0]
