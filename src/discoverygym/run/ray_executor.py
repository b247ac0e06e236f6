"""Ray executor: episodes as independent Ray tasks on an existing cluster (`--address`
or RAY_ADDRESS) or a local one started on demand. Tasks are retried when a worker is
lost; only the driver writes records."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from .job import Job

# Retries cover lost workers/nodes (system failures); an exception inside an episode
# is already turned into a record by the job, so application errors are not retried.
MAX_RETRIES = 3


def run_ray(jobs: Sequence[Job], workers: int = 2, address: str | None = None
            ) -> Iterator[tuple[int, Any]]:
    import ray

    if not jobs:
        return
    started_here = False
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
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

    @ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)
    def _run(fn, args):
        from discoverygym.run.lifeline import ensure_bound

        if driver is not None:
            ensure_bound(driver)  # the worker ends if the driver is killed
        return fn(*args)

    try:
        refs = {_run.remote(fn, args): i for i, (fn, args) in enumerate(jobs)}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    yield refs[ref], ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - reported per job by the driver
                    yield refs[ref], exc
    finally:
        if started_here:
            ray.shutdown()
