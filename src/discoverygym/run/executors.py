"""Executors: how episodes are spread over processes. Each takes a list of jobs
(callable + args) and yields (index, result or exception) as jobs finish. Records
are written by the driver alone, so a lost worker cannot corrupt the record file."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from .errors import ExecutorLost  # noqa: F401 - raised through here by the Ray executor
from .job import Job
from .lifeline import bind_to_driver


def run_serial(jobs: Sequence[Job], workers: int = 1) -> Iterator[tuple[int, Any]]:
    for i, (fn, args) in enumerate(jobs):
        try:
            yield i, fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported per job by the driver
            yield i, exc


THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def worker_thread_budget(workers: int) -> Iterator[None]:
    """While workers start, give each a share of the cores for BLAS/OpenMP threads
    (where the user has not set them): N workers each running a BLAS with one thread
    per core oversubscribe the machine, and a 1024 x 1024 eigendecomposition then took
    20-45 times longer (mad's quantum world)."""
    share = str(max(1, (os.cpu_count() or 1) // max(1, workers)))
    added = [name for name in THREAD_VARS if name not in os.environ]
    for name in added:
        os.environ[name] = share
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def run_process(jobs: Sequence[Job], workers: int = 2) -> Iterator[tuple[int, Any]]:
    """A process pool. `spawn` keeps workers free of the driver's state (JAX and
    forked threads do not mix)."""
    if not jobs:
        return
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=max(1, workers), mp_context=ctx,
                               initializer=bind_to_driver, initargs=(os.getpid(),))
    finished_normally = False
    try:
        with worker_thread_budget(workers):  # workers start on the first submits
            pending = {pool.submit(fn, *args): i for i, (fn, args) in enumerate(jobs)}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                i = pending.pop(future)
                try:
                    yield i, future.result()
                except Exception as exc:  # noqa: BLE001
                    yield i, exc
        finished_normally = True
    finally:
        if finished_normally:
            pool.shutdown(wait=True)
        else:  # Ctrl-C, a write error, the consumer stopped: do not run what is left
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()
            pool.shutdown(wait=False, cancel_futures=True)


EXECUTORS: dict[str, Callable[..., Iterator[tuple[int, Any]]]] = {
    "serial": run_serial,
    "process": run_process,
}


def get_executor(name: str) -> Callable[..., Iterator[tuple[int, Any]]]:
    if name == "ray":
        from .ray_executor import run_ray  # optional extra

        return run_ray
    if name not in EXECUTORS:
        raise ValueError(f"Unknown executor {name!r}; choose serial, process or ray.")
    return EXECUTORS[name]
