"""The same 50-episode run gives identical records under every executor, and a run
killed mid-way under one executor finishes under another without duplicates or
losses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toy_suite
from crash import kill_after_records, tear_last_line
from discoverygym.core import get_suite
from discoverygym.run import read_records, run_episodes
from testpaths import TESTS

toy_suite.install()
N_EPISODES = 50


def _comparable(records):
    out = []
    for r in sorted(records, key=lambda r: (r["task_id"], r["seed"])):
        r = dict(r)
        r["usage"] = {k: v for k, v in r["usage"].items() if k != "wall_s"}
        r["agent"] = "bisect" if r["agent"] == "slow-bisect" else r["agent"]
        out.append(r)
    return out


def _specs():
    return get_suite("toy").episodes(range(N_EPISODES))


def _run_ray(**kwargs):
    try:
        import ray  # noqa: F401
    except ImportError as exc:  # pragma: no cover - ray is in [all]
        pytest.skip(f"ray is not installed: {exc}")
    try:
        return run_episodes(executor="ray", workers=2, show_progress=False, **kwargs)
    except Exception as exc:  # Ray could not start here (no shared memory, ...)
        pytest.skip(f"Ray could not start: {type(exc).__name__}: {exc}")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    run_episodes(_specs(), out_dir=out, agent="bisect", executor="serial", show_progress=False)
    records = read_records(out / "records.jsonl")
    assert len(records) == N_EPISODES
    return _comparable(records)


def test_process_pool_matches_serial(tmp_path, reference):
    run_episodes(_specs(), out_dir=tmp_path, agent="bisect", executor="process", workers=2,
                 show_progress=False)
    assert _comparable(read_records(tmp_path / "records.jsonl")) == reference


def test_ray_matches_serial(tmp_path, reference):
    result = _run_ray(specs=_specs(), out_dir=tmp_path, agent="bisect")
    assert result.n_new == N_EPISODES
    assert _comparable(read_records(tmp_path / "records.jsonl")) == reference


def _killed_process_run(out: Path) -> int:
    """Start a process-pool run in another process, SIGKILL its whole group once some
    records are written, and leave a torn last line as a crash mid-write would."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        import toy_suite
        toy_suite.install()
        from discoverygym.core import get_suite
        from discoverygym.run import run_episodes
        run_episodes(get_suite("toy").episodes(range({N_EPISODES})), out_dir={str(out)!r},
                     agent="slow-bisect", executor="process", workers=2, show_progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    records = out / "records.jsonl"
    partial = kill_after_records(proc, records, at_least=6)
    assert 6 <= partial < N_EPISODES, partial
    tear_last_line(records, '{"suite": "toy", "task_')
    return partial


@pytest.mark.parametrize("resume_with", ["serial", "ray"])
def test_killed_process_run_resumes_under_another_executor(tmp_path, reference, resume_with):
    partial = _killed_process_run(tmp_path)
    kwargs = {"specs": _specs(), "out_dir": tmp_path, "agent": "bisect", "resume": True}
    if resume_with == "ray":
        result = _run_ray(**kwargs)
    else:
        result = run_episodes(executor="serial", show_progress=False, **kwargs)
    assert result.n_new == N_EPISODES - partial
    final = read_records(tmp_path / "records.jsonl")
    assert len({(r["task_id"], r["seed"]) for r in final}) == len(final) == N_EPISODES
    assert _comparable(final) == reference


def test_process_workers_run_blas_with_one_thread(monkeypatch):
    from discoverygym.run.executors import THREAD_VARS, run_process

    for name in THREAD_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "7")  # a user's own setting is kept
    jobs = [(os.getenv, (name,)) for name in THREAD_VARS]
    got = dict(run_process(jobs, workers=2))
    assert [got[i] for i in range(3)] == ["1", "1", "7"]  # same bits whatever the workers
    assert all(name not in os.environ for name in THREAD_VARS[:2])  # the driver's is untouched


def test_units_bundle_jobs_by_label_in_order_of_first_appearance():
    from discoverygym.run.executors import units_of

    assert units_of(5, ["a", None, "b", "a", None]) == [[0, 3], [1], [2], [4]]
    assert units_of(3, None) == [[0], [1], [2]]


def test_a_group_runs_on_one_worker_and_a_failing_job_fails_alone():
    """Jobs of one label share a worker (its per-process caches); without the grouping,
    two workers would split these sleeping jobs between them."""
    from discoverygym.run.executors import run_process

    jobs = [(toy_suite.pid_after, (0.2,))] * 8 + [(int, ("not a number",))]
    groups = ["a", "b"] * 4 + ["a"]
    got = dict(run_process(jobs, workers=2, groups=groups))
    assert sorted(got) == list(range(9))
    assert isinstance(got[8], ValueError)  # its group's other results still came back
    assert len({got[i] for i in range(0, 8, 2)}) == 1  # every "a" in one process
    assert len({got[i] for i in range(1, 8, 2)}) == 1


def test_mad_quantum_shares_a_seed_and_other_worlds_share_nothing():
    from discoverygym.run.runner import shared_work_groups

    quantum = get_suite("mad").episodes([0, 1], world="quantum")
    labels = shared_work_groups(quantum)
    assert set(labels) == {"quantum seed 0", "quantum seed 1"}
    assert all(label == f"quantum seed {s.seed}" for s, label in zip(quantum, labels,
                                                                        strict=True))
    classical = get_suite("mad").episodes([0], world="classical")
    assert set(shared_work_groups(classical)) == {None}
    assert set(shared_work_groups(get_suite("toy").episodes([0, 1]))) == {None}


@pytest.mark.parametrize("executor", ["process", "ray"])
def test_a_labels_shared_state_is_computed_once(executor):
    """Episodes sharing a label (mad's quantum seed) compute their shared state once in
    all: the process pool and Ray alike play a label's jobs on one worker. Without the
    grouping each worker that got one of them would compute it again."""
    from discoverygym.run.executors import run_process

    labels = ["q0", "q1", "q2"] * 4
    jobs = [(toy_suite.shared_state, (label,)) for label in labels]
    if executor == "ray":
        pytest.importorskip("ray")
        from discoverygym.run.ray_executor import run_ray

        try:
            got = dict(run_ray(jobs, workers=2, groups=labels))
        except Exception as exc:  # Ray could not start here (no shared memory, ...)
            pytest.skip(f"Ray could not start: {type(exc).__name__}: {exc}")
    else:
        got = dict(run_process(jobs, workers=2, groups=labels))
    assert sorted(got) == list(range(len(jobs)))
    assert sum(got.values()) == 3  # one shared state per label
    ungrouped = dict(run_process(jobs, workers=2, groups=None))
    assert sum(ungrouped.values()) > 3  # the same jobs ungrouped: computed on each worker


def test_a_pool_started_early_loads_the_suite_before_the_first_job():
    """`run` starts its workers before it imports the suite and plans (issue #37): each
    loads the suite and the agent's module as it starts, beside the driver, so the first
    job finds them loaded. A pool started by run_process itself loads nothing ahead."""
    from discoverygym.run.executors import run_process, start_process_pool

    names = ["discoverygym.suites.gravity.suite", "discoverygym.suites.gravity.baselines.expert"]
    job = [(toy_suite.modules_loaded, (names,))]
    early = start_process_pool(1, "gravity", "expert-adaptive")
    assert dict(run_process(job, workers=1, pool=early))[0] == [True, True]
    assert dict(run_process(job, workers=1))[0] == [False, False]


def test_a_run_refused_after_its_workers_started_leaves_none_behind(tmp_path):
    """A value only the suite can check (an unknown mad world) is refused after the early
    pool has started: its workers are killed with the refusal, none outlives the command."""
    import psutil
    from typer.testing import CliRunner

    from discoverygym.cli import app

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    result = CliRunner().invoke(app, ["run", "mad", "--world", "nowhere", "--agent",
                                      "newtonian", "--out", str(tmp_path / "run")])
    assert result.exit_code == 1 and "nowhere" in result.output
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    gone, alive = psutil.wait_procs(left, timeout=10)
    assert not alive
    assert not (tmp_path / "run").exists()
