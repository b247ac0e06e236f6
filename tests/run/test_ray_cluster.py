"""Node loss on a real multi-node Ray cluster (a head and two worker nodes on this
machine): every record is written once whatever part of the cluster is lost.

- worker nodes removed while their episodes run (the CLI, `--executor ray --address`):
  the run finishes with every record once, the summary complete;
- a worker killed while it hands its record over: Ray retries, one record;
- every worker node lost: the run stops with a clear reason instead of hanging, and
  `--resume` finishes it once a node is back;
- the head lost: the CLI stops with one line and exit 1, `--resume` finishes it.
No Ray process of the cluster is left after any of them (`ray_cluster`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

import toy_suite
from discoverygym.core import episode_key, get_suite
from discoverygym.run import read_records, run_episodes
from ray_cluster import TESTS, play_and_die_handing_over, ray_cluster, wait_for_records

pytest.importorskip("ray")
toy_suite.install()  # before any cluster starts: its nodes' workers inherit the plugin
pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "discoverygym.cli"]
# 12 easy stargazer tasks: about a second each on one CPU, long enough to lose a node
# while they run, short enough for the whole file to take a few minutes
N_STARGAZER = 12
STARGAZER_TASKS = ",".join(f"easy-{i:03d}" for i in range(N_STARGAZER))
STARGAZER = ["stargazer", "--agent", "classical", "--tier", "easy", "--tasks", STARGAZER_TASKS]


def _stargazer_keys() -> list[str]:
    specs = get_suite("stargazer").episodes(tier="easy", tasks=tuple(STARGAZER_TASKS.split(",")))
    assert len(specs) == N_STARGAZER
    return [episode_key(s.suite, s.task_id, s.seed, s.options) for s in specs]


def _keys(records) -> Counter:
    return Counter(episode_key(r["suite"], r["task_id"], r["seed"], r["options"])
                   for r in records)


def _assert_complete(out: Path, planned_keys: list[str]) -> list[dict]:
    """Every planned episode has exactly one record, none lost to the infrastructure,
    and the summary counts them all."""
    lines = (out / "records.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert _keys(records) == Counter(planned_keys)  # none lost, none twice
    assert not [r for r in records if (r.get("details") or {}).get("infrastructure_failure")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_episodes"] == summary["n_planned"] == len(planned_keys)
    assert not summary["interrupted"] and "stopped" not in summary
    return records


def _cli_env() -> dict[str, str]:
    """The CLI's environment: this one, with the toy plugin importable."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)}


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_cli_env())


def test_worker_nodes_lost_mid_run_every_record_once(tmp_path):
    """Both original worker nodes are removed while they run episodes (a fresh node joins
    after the first loss); the run ends normally with every record once. The head has no
    CPU and episodes are still queued, so each worker node has one in flight when it
    goes."""
    out = tmp_path / "run"
    with ray_cluster(workers=2) as cluster:
        first, second = list(cluster.worker_nodes)
        proc = _cli("run", *STARGAZER, "--executor", "ray", "--address", cluster.address,
                    "--out", str(out), "--quiet")
        try:
            assert wait_for_records(out / "records.jsonl", 3, proc) >= 3
            cluster.remove_node(first)       # its episode in flight is retried elsewhere
            cluster.add_node(num_cpus=1)
            wait_for_records(out / "records.jsonl", 6, proc)
            cluster.remove_node(second)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            proc.kill()
    assert proc.returncode == 0, stderr[-2000:]
    records = _assert_complete(out, _stargazer_keys())
    assert all(r["passed"] for r in records)  # the classical baseline passes every easy task


def test_head_lost_stops_with_one_line_and_resume_finishes(tmp_path):
    out = tmp_path / "run"
    with ray_cluster(workers=2) as cluster:
        proc = _cli("run", *STARGAZER, "--executor", "ray", "--address", cluster.address,
                    "--out", str(out), "--quiet")
        try:
            assert wait_for_records(out / "records.jsonl", 3, proc) >= 3
            cluster.remove_node(cluster.head_node)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            proc.kill()
    assert proc.returncode == 1, (stdout[-2000:], stderr[-2000:])
    assert "Traceback" not in stdout + stderr
    error_lines = [line for line in stdout.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1, (stdout[-3000:], stderr[-3000:])
    assert "run stopped: the Ray cluster at" in error_lines[0]
    assert "--resume" in error_lines[0]
    kept = read_records(out / "records.jsonl")
    assert 3 <= len(kept) < N_STARGAZER
    assert not [r for r in kept if r.get("error")]  # no failure record per lost episode
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and "was lost" in summary["stopped"]

    # the cluster is gone for good: the same run finishes on this machine's processes
    done = subprocess.run([*CLI, "run", *STARGAZER, "--executor", "process", "--workers", "2",
                           "--out", str(out), "--resume", "--quiet"],
                          capture_output=True, text=True, timeout=300, env=_cli_env())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    _assert_complete(out, _stargazer_keys())


def _toy_reference(tmp_path: Path, n: int) -> list[dict]:
    out = tmp_path / "serial"
    run_episodes(get_suite("toy").episodes(range(n)), out_dir=out, agent="bisect", executor="serial",
                 show_progress=False)
    return _comparable(read_records(out / "records.jsonl"))


def _comparable(records):
    out = []
    for r in sorted(records, key=lambda r: r["seed"]):
        r = dict(r)
        r["usage"] = {k: v for k, v in r["usage"].items() if k != "wall_s"}
        out.append(r)
    return out


def test_worker_killed_while_handing_its_record_over(tmp_path):
    """The worker dies (SIGKILL) while Ray serializes the record it returns: the
    episode is played again and its record is written once, as a serial run writes it."""
    n, victims = 12, (2, 7)
    specs = get_suite("toy").episodes(range(n))
    markers = tmp_path / "markers"
    markers.mkdir()
    with ray_cluster(workers=2) as cluster:
        result = run_episodes(specs, out_dir=tmp_path / "run", job=play_and_die_handing_over,
                              job_args=("bisect", str(markers), victims), who="bisect",
                              executor="ray", show_progress=False,
                              executor_options={"address": cluster.address})
    assert sorted(p.name for p in markers.iterdir()) == [f"died-{s}" for s in victims]
    assert result.failures == [] and result.stopped is None
    records = read_records(tmp_path / "run" / "records.jsonl")
    assert _comparable(records) == _toy_reference(tmp_path, n)


def test_every_worker_node_lost_stops_instead_of_hanging(tmp_path):
    """With no node left that has CPUs, the driver stops after `no_cpu_timeout_s`
    with the reason (it used to wait forever); `--resume` on a cluster with a node
    again finishes the run with every record once."""
    n = 30
    specs = get_suite("toy").episodes(range(n))
    out = tmp_path / "run"
    with ray_cluster(workers=2) as cluster:
        nodes = list(cluster.worker_nodes)

        def remove_all_workers() -> None:
            wait_for_records(out / "records.jsonl", 3)
            for node in nodes:
                cluster.remove_node(node)

        remover = threading.Thread(target=remove_all_workers)
        remover.start()
        result = run_episodes(specs, out_dir=out, agent="slow-bisect", executor="ray",
                              show_progress=False,
                              executor_options={"address": cluster.address,
                                                "no_cpu_timeout_s": 3})
        remover.join()
        assert result.stopped and "no node with CPUs for 3 s" in result.stopped
        assert 3 <= result.n_new < n
        summary = json.loads((out / "summary.json").read_text())
        assert summary["interrupted"] and summary["stopped"] == result.stopped

        cluster.add_node(num_cpus=1)
        again = run_episodes(specs, out_dir=out, agent="slow-bisect", executor="ray",
                             resume=True, show_progress=False,
                             executor_options={"address": cluster.address})
    assert again.stopped is None and again.failures == []
    assert again.n_new == n - result.n_new
    reference = _toy_reference(tmp_path, n)
    for r in reference:
        r["agent"] = "slow-bisect"
    assert _comparable(read_records(out / "records.jsonl")) == reference
