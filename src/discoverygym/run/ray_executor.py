"""Ray executor: episodes as independent Ray tasks on an existing cluster (`--address`
or RAY_ADDRESS) or a local one started on demand. Tasks are retried when a worker or a
worker node is lost; only the driver writes records, one per episode. When the cluster
itself is lost (its head, the driver's own raylet) or has no node with CPUs for
`no_cpu_timeout_s`, the run stops with `ExecutorLost` and `--resume` finishes it."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from .errors import ExecutorLost
from .job import Job, play_group, units_of

# Retries cover lost workers/nodes (system failures); an exception inside an episode
# is already turned into a record by the job, so application errors are not retried.
MAX_RETRIES = 3
# How long the driver waits for a cluster without any CPU (every worker node lost, an
# autoscaler still adding nodes) before it stops the run rather than hang.
NO_CPU_TIMEOUT_S = 600.0
POLL_S = 1.0
# The head (its GCS) refusing connections this many polls in a row is a lost head. The
# driver must find out itself: Ray's own calls to a dead GCS block, and Ray ends the
# driver's process without a word after 60 s (`gcs_rpc_server_reconnect_timeout_s`).
HEAD_LOST_POLLS = 3
GET_SLICE_S = 5.0
SHUTDOWN_WAIT_S = 10.0


def run_ray(jobs: Sequence[Job], workers: int = 2, address: str | None = None,
            no_cpu_timeout_s: float = NO_CPU_TIMEOUT_S,
            groups: Sequence[str | None] | None = None) -> Iterator[tuple[int, Any]]:
    """Each unit (a job, or the jobs of one `groups` label: episodes that share a
    per-process cache, see `Suite.shared_work`) is one Ray task, so a label's shared
    work is done once, on the worker that plays its episodes, as under the process
    executor. A unit lost with its node is retried whole (its results are the same)."""
    import ray

    if not jobs:
        return
    started_here = False
    address = address or os.environ.get("RAY_ADDRESS")
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False,
                                  "include_dashboard": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            # A local cluster's workers should import what the driver imports (plugins
            # and suites found through the driver's sys.path).
            runtime_env = {"env_vars": {
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                "DISCOVERYGYM_PLUGINS": os.environ.get("DISCOVERYGYM_PLUGINS", ""),
            }}
            ray.init(num_cpus=max(1, workers), runtime_env=runtime_env, **kwargs)
        started_here = True

    # Only a local cluster's workers can see the driver's pid (on a remote cluster the
    # driver's death is Ray's to handle).
    driver = os.getpid() if started_here and not address else None
    where = f"the Ray cluster at {address}" if address else "the local Ray cluster"

    @ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)
    def _run(members):
        from discoverygym.run.lifeline import ensure_bound

        if driver is not None:
            ensure_bound(driver)  # the worker ends if the driver is killed
        return play_group(members)

    head = _HeadWatch(ray.get_runtime_context().gcs_address, where)
    lost = False
    try:
        refs = {_run.remote([jobs[i] for i in unit]): unit
                for unit in units_of(len(jobs), groups)}
        pending = list(refs)
        no_cpu_since: float | None = None
        while pending:
            try:
                ready, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
            except Exception as exc:  # noqa: BLE001 - the cluster, not an episode, failed
                raise ExecutorLost(f"{where} was lost: {_short(exc)}") from exc
            head.check_every(POLL_S)
            if not ready:
                if head.refused == 0:  # Ray's calls to a head that does not answer block
                    no_cpu_since = _check_cpus(ray, no_cpu_since, no_cpu_timeout_s, where)
                continue
            no_cpu_since = None
            for ref in ready:
                unit = refs[ref]
                try:
                    results = _get(ray, ref, head)
                except ray.exceptions.LocalRayletDiedError as exc:
                    # the driver's raylet (on the head, for a driver started there) is
                    # gone: every episode still pending would fail the same way
                    raise ExecutorLost(f"{where} was lost (its head or the driver's "
                                       f"raylet died): {_short(exc)}") from exc
                except ExecutorLost:
                    raise
                except Exception as exc:  # noqa: BLE001 - reported per job by the driver
                    results = [exc] * len(unit)
                yield from zip(unit, results, strict=True)
    except ExecutorLost:
        lost = True
        raise
    finally:
        if started_here and lost:
            # disconnecting from a dead head can block: give it a bounded time
            closer = threading.Thread(target=ray.shutdown, daemon=True)
            closer.start()
            closer.join(SHUTDOWN_WAIT_S)
        elif started_here:
            ray.shutdown()


def _get(ray: Any, ref: Any, head: _HeadWatch) -> Any:
    """A finished episode's record. A large one lives in a node's object store and is
    fetched through the driver's raylet, which blocks while the head is gone: wait in
    slices and check the head between them."""
    while True:
        try:
            return ray.get(ref, timeout=GET_SLICE_S)
        except ray.exceptions.GetTimeoutError:
            head.check()


class _HeadWatch:
    """Whether the cluster's head still accepts connections on its GCS port."""

    def __init__(self, gcs_address: str, where: str) -> None:
        host, _, port = gcs_address.rpartition(":")
        self.host, self.port, self.where = host.strip("[]"), int(port), where
        self.refused = 0
        self.last = time.monotonic()

    def check_every(self, interval_s: float) -> None:
        """`check`, at most once per `interval_s`."""
        if time.monotonic() - self.last >= interval_s:
            self.check()

    def check(self) -> None:
        self.last = time.monotonic()
        try:
            with socket.create_connection((self.host, self.port), timeout=POLL_S):
                self.refused = 0
                return
        except OSError as exc:
            self.refused += 1
            if self.refused >= HEAD_LOST_POLLS:
                raise ExecutorLost(f"{self.where} was lost: its head ({self.host}:"
                                   f"{self.port}) does not answer ({exc.strerror or exc})"
                                   ) from exc


def _check_cpus(ray: Any, since: float | None, timeout_s: float, where: str) -> float | None:
    """Track how long the cluster has had no CPU; raise `ExecutorLost` past `timeout_s`."""
    try:
        cpus = float(ray.cluster_resources().get("CPU", 0))
    except Exception as exc:  # noqa: BLE001 - the GCS itself is unreachable
        raise ExecutorLost(f"{where} was lost: {_short(exc)}") from exc
    if cpus > 0:
        return None
    now = time.monotonic()
    if since is None:
        return now
    if now - since >= timeout_s:
        raise ExecutorLost(f"{where} has had no node with CPUs for {timeout_s:.0f} s "
                           "(every worker node lost?)")
    return since


def _short(exc: BaseException) -> str:
    """The first line of an exception, bounded: Ray's messages run to paragraphs."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}"
