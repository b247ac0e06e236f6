"""A real multi-node Ray cluster on this machine for the node-loss tests (as Ray's own
tests build one: `ray.cluster_utils.Cluster`), and the hostile jobs those tests run.

Every Ray process of the cluster carries the cluster's own temporary folder in its
command line, so the tests can prove that none is left afterwards without mistaking
another run's Ray processes for theirs."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

TESTS = Path(__file__).parent


def processes_of(temp_dir: str) -> list[psutil.Process]:
    """Live processes whose command line names `temp_dir` (the cluster's raylets, GCS,
    workers...)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(temp_dir in part for part in proc.info["cmdline"] or ()):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@contextlib.contextmanager
def ray_cluster(workers: int = 2) -> Iterator[Any]:
    """A head without CPUs (so episodes run on the worker nodes only) and `workers`
    nodes with one CPU each. On exit the cluster is shut down and no process of it may
    be left."""
    import pytest

    cluster_mod = pytest.importorskip("ray.cluster_utils")
    # short: Ray's unix sockets live under it (108-byte limit on their paths)
    temp_dir = tempfile.mkdtemp(prefix="dgray", dir="/tmp")
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "PYTHONPATH")}
    os.environ["RAY_TMPDIR"] = temp_dir  # Ray's files (and its address file) stay here
    # the nodes' workers import the tests' jobs and the toy plugin from here
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), saved["PYTHONPATH"]) if p)
    cluster = None
    try:
        for attempt in (1, 2):  # a loaded machine can miss Ray's start-up deadlines once
            try:
                cluster = cluster_mod.Cluster(initialize_head=True, head_node_args={
                    "num_cpus": 0, "include_dashboard": False})
                for _ in range(workers):
                    cluster.add_node(num_cpus=1)
                cluster.wait_for_nodes()
                break
            except Exception as exc:  # no shared memory, no ports: not what is tested here
                _kill_all(temp_dir, cluster)
                cluster = None
                if attempt == 2:
                    pytest.skip(f"a Ray cluster could not start here: "
                                f"{type(exc).__name__}: {str(exc)[:200]}")
        cluster.temp_dir = temp_dir
        yield cluster
    finally:
        if cluster is not None:
            cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        left = _wait_gone(temp_dir, timeout_s=30)
        for proc in left:  # do not leak them into the next test, but fail this one
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not left, f"Ray processes left: {[p.pid for p in left]}"


def _kill_all(temp_dir: str, cluster: Any) -> None:
    """After a failed start: whatever of the cluster did start goes."""
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.shutdown()
    for proc in processes_of(temp_dir):
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    _wait_gone(temp_dir, timeout_s=10)


def _wait_gone(temp_dir: str, timeout_s: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout_s
    while True:
        left = processes_of(temp_dir)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def count_lines(path: Path) -> int:
    """Complete record lines in `path` so far."""
    if not path.exists():
        return 0
    return path.read_bytes().count(b"\n")


def wait_for_records(path: Path, at_least: int, proc=None, timeout_s: float = 400.0) -> int:
    """Wait until `path` holds `at_least` records (or `proc` ended); return the count."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        n = count_lines(path)
        if n >= at_least or (proc is not None and proc.poll() is not None):
            return n
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {at_least} records in {timeout_s} s")


class DieWhenPickled:
    """Kills the process that serializes it: a worker that dies while it hands its
    record over (Ray pickles a task's result into the object store)."""

    def __reduce__(self):
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


def play_and_die_handing_over(spec: dict[str, Any], agent: str, marker_dir: str,
                              victims: tuple[int, ...]) -> dict[str, Any]:
    """Play the episode; on the first attempt of a victim seed, die while the record is
    being written out of the worker. A retry (the marker exists) hands it over."""
    from discoverygym.run.episode_worker import play_scripted

    record = play_scripted(spec, agent)
    if spec["seed"] in victims:
        try:  # the first attempt of this episode, whichever worker runs it
            fd = os.open(Path(marker_dir) / f"died-{spec['seed']}", os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return record
        os.close(fd)
        return {**record, "details": {**record["details"], "_die": DieWhenPickled()}}
    return record
