"""The runner: records, summary, resume after a crash, failures recorded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import toy_suite
from crash import kill_after_records, tear_last_line
from discoverygym.core import get_suite
from discoverygym.run import read_records, run_episodes
from testpaths import TESTS

toy_suite.install()


def test_serial_run_writes_records_and_summary(tmp_path):
    specs = get_suite("toy").episodes(range(4))
    result = run_episodes(specs, out_dir=tmp_path, agent="bisect", executor="serial",
                          show_progress=False)
    recs = read_records(tmp_path / "records.jsonl")
    assert len(recs) == 4 and all(r["passed"] for r in recs)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["n_episodes"] == 4 and summary["pass_rate"] == 1.0
    assert summary["per_task"]["guess"] == {"n": 4, "passed": 4}
    assert json.loads((tmp_path / "run.json").read_text())["n_planned"] == 4
    assert result.n_new == 4


def test_missing_answer_and_agent_crash_are_failed_records(tmp_path):
    specs = get_suite("toy").episodes(range(2))
    run_episodes(specs, out_dir=tmp_path / "a", agent="give-up", executor="serial",
                 show_progress=False)
    run_episodes(specs, out_dir=tmp_path / "b", agent="crash", executor="serial",
                 show_progress=False)
    gave_up = read_records(tmp_path / "a" / "records.jsonl")
    crashed = read_records(tmp_path / "b" / "records.jsonl")
    assert [r["passed"] for r in gave_up + crashed] == [False] * 4
    assert all(r["error"] == "no answer submitted" for r in gave_up)
    assert all("agent crashed: RuntimeError: boom" in r["error"] for r in crashed)


def test_same_seed_same_record(tmp_path):
    specs = get_suite("toy").episodes(range(3))
    for d in ("x", "y"):
        run_episodes(specs, out_dir=tmp_path / d, agent="bisect", executor="serial",
                     show_progress=False)

    def strip(r):
        r = dict(r)
        r["usage"] = {k: v for k, v in r["usage"].items() if k != "wall_s"}
        return r

    x = [strip(r) for r in read_records(tmp_path / "x" / "records.jsonl")]
    y = [strip(r) for r in read_records(tmp_path / "y" / "records.jsonl")]
    assert x == y


def test_resume_after_kill_finishes_without_duplicates(tmp_path):
    """Kill a slow run mid-way (SIGKILL, no cleanup), then resume it."""
    out = tmp_path / "run"
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(TESTS)!r})
        import toy_suite
        toy_suite.install()
        class Slow(toy_suite.Bisect):
            def solve(self, view):
                time.sleep(0.4)
                super().solve(view)
        toy_suite.Slow = Slow
        from discoverygym.core import register_agents
        register_agents("toy", {{"slow": "toy_suite:Slow"}})
        from discoverygym.core import get_suite
        from discoverygym.run import run_episodes
        run_episodes(get_suite("toy").episodes(range(10)), out_dir={str(out)!r}, agent=sys.argv[1],
                     executor="serial", resume=True, show_progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script, "slow"], start_new_session=True)
    records = out / "records.jsonl"
    partial = kill_after_records(proc, records, at_least=3)
    assert 3 <= partial < 10
    tear_last_line(records, '{"suite": "toy", "task_')
    subprocess.run([sys.executable, "-c", script, "bisect"], check=True)
    final = read_records(records)
    keys = [(r["task_id"], r["seed"]) for r in final]
    assert len(final) == 10 and len(set(keys)) == 10
