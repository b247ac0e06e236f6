"""An executor that is lost mid-run (a Ray cluster's head) stops the run: the records
written so far are kept, the summary says why it stopped, no failed record stands for
the episodes not played, and `--resume` plays exactly those. Fast, without Ray: the
real cluster cases are in test_ray_cluster.py."""

from __future__ import annotations

import json

import toy_suite
from discoverygym.core import get_suite
from discoverygym.run import read_records, run_episodes
from discoverygym.run import runner as runner_module
from discoverygym.run.executors import ExecutorLost, run_serial

toy_suite.install()


def _lost_after(n_done: int):
    def execute(jobs, workers=1, **_):
        for i, result in run_serial(jobs):
            if i == n_done:
                raise ExecutorLost("the Ray cluster at test:1 was lost: its head does not answer")
            yield i, result
    return execute


def test_a_lost_executor_stops_the_run_and_resume_finishes_it(tmp_path, monkeypatch):
    specs = get_suite("toy").episodes(range(10))
    monkeypatch.setattr(runner_module, "get_executor", lambda name: _lost_after(4))
    result = run_episodes(specs, out_dir=tmp_path, agent="bisect", executor="ray",
                          show_progress=False)
    assert result.stopped == "the Ray cluster at test:1 was lost: its head does not answer"
    assert result.interrupted and result.n_new == 4 and result.failures == []
    assert [r["seed"] for r in read_records(tmp_path / "records.jsonl")] == [0, 1, 2, 3]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["interrupted"] and summary["stopped"] == result.stopped
    assert summary["n_episodes"] == 4 and summary["n_planned"] == 10

    monkeypatch.undo()
    again = run_episodes(specs, out_dir=tmp_path, agent="bisect", executor="serial",
                         resume=True, show_progress=False)
    assert again.stopped is None and again.n_new == 6
    assert sorted(r["seed"] for r in read_records(tmp_path / "records.jsonl")) == list(range(10))
