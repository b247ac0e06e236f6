"""Executors: how episodes are spread over processes. Each takes a list of jobs
(callable + args) and yields (index, result or exception) as jobs finish. Records
are written by the driver alone, so a lost worker cannot corrupt the record file."""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import queue
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from .errors import ExecutorLost  # noqa: F401 - raised through here by the Ray executor
from .job import Job, play_group, units_of
from .lifeline import bind_to_driver


def run_serial(jobs: Sequence[Job], workers: int = 1,
               groups: Sequence[str | None] | None = None) -> Iterator[tuple[int, Any]]:
    """One job after another in this process (where every group shares it anyway),
    with BLAS at one thread as in the process pool's workers."""
    for i, (fn, args) in enumerate(jobs):
        try:
            with single_threaded_numerics():
                result = fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported per job by the driver
            result = exc
        yield i, result


def single_threaded_numerics() -> contextlib.AbstractContextManager[Any]:
    """BLAS/OpenMP pools of this process at one thread while the block runs, as in the
    workers (see worker_thread_budget), so that a truth computed here has the same bits.
    threadpoolctl does it where installed; without it, the tolerance of `verify` covers
    the last bits a threaded BLAS may change."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def worker_thread_budget(workers: int) -> Iterator[None]:
    """While workers start, pin each one's BLAS/OpenMP pools to one thread (where the
    user has not set them). Two reasons: N workers each running a BLAS with one thread
    per core oversubscribe the machine (a 1024 x 1024 eigendecomposition then took
    20-45 times longer in mad's quantum world); and the order of a threaded BLAS's sums
    depends on its thread count, so truths computed with one thread have the same bits
    whatever the worker count, and `discoverygym verify` replays them (single-threaded
    too) bit for bit. Parallelism comes from the workers."""
    share = "1"
    added = [name for name in THREAD_VARS if name not in os.environ]
    for name in added:
        os.environ[name] = share
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def run_process(jobs: Sequence[Job], workers: int = 2,
                groups: Sequence[str | None] | None = None,
                pool: ProcessPoolExecutor | None = None) -> Iterator[tuple[int, Any]]:
    """A process pool. `spawn` keeps workers free of the driver's state (JAX and
    forked threads do not mix). Jobs that share a `groups` label (see
    `Suite.shared_work`) run one after another on one worker; a lost worker fails every
    job of its unit, each with its own record. `pool`: one `start_process_pool` started
    earlier (its workers already loading the suite); it is shut down here as well."""
    if not jobs:
        return
    if pool is None:
        pool = _spawn_pool(workers, bind_to_driver, (os.getpid(),))
    finished_normally = False
    # Finished futures arrive through a queue, not concurrent.futures.wait: wait() takes
    # the lock of every pending future in turn, and a Ctrl-C or SIGTERM landing while it
    # held some (thousands of futures: likely) left them held, so the pool's manager
    # thread and the interpreter's exit waited on them forever.
    finished: queue.SimpleQueue = queue.SimpleQueue()
    try:
        pending = {}
        with worker_thread_budget(workers):  # workers start on the first submits
            for unit in units_of(len(jobs), groups):
                future = pool.submit(play_group, [jobs[i] for i in unit])
                pending[future] = unit
                future.add_done_callback(finished.put)
        while pending:
            future = _next_done(finished)
            unit = pending.pop(future)
            try:
                results = future.result()
            except Exception as exc:  # noqa: BLE001 - e.g. the worker died
                results = [exc] * len(unit)
            yield from zip(unit, results, strict=True)
        finished_normally = True
    finally:
        if finished_normally:
            pool.shutdown(wait=True)
        else:  # Ctrl-C, a write error, the consumer stopped: do not run what is left
            stop_pool(pool)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's workers and shut it down without waiting (a no-op once shut down)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def start_process_pool(workers: int, suite: str, agent: str) -> ProcessPoolExecutor:
    """The process executor's pool, its workers started now, each loading `suite` and
    its scripted `agent` as it starts: while the driver imports the suite and plans the
    episodes (a second or more), the workers do the same imports beside it instead of
    after it. Pass it to `run_process`; `stop_pool` where the run does not start."""
    pool = _spawn_pool(workers, _start_worker, (os.getpid(), suite, agent))
    # A spawn-context pool starts a worker per submit. No more than the cores: the
    # episode count is not known yet, and a worker beyond it would load the suite for
    # nothing (the rest start on demand, as in a pool started by run_process).
    with worker_thread_budget(workers):
        for _ in range(max(1, min(workers, os.cpu_count() or 1))):
            pool.submit(int)
    return pool


def _spawn_pool(workers: int, initializer: Callable[..., None],
                initargs: tuple[Any, ...]) -> ProcessPoolExecutor:
    """A pool of `spawn` workers (they start on submits, see worker_thread_budget)."""
    return ProcessPoolExecutor(max_workers=max(1, workers),
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=initializer, initargs=initargs)


def _start_worker(driver_pid: int, suite: str, agent: str) -> None:
    bind_to_driver(driver_pid)
    try:  # what fails here fails again, reported, in the first job that needs it
        from ..core.suite import agent_table, get_suite

        get_suite(suite)
        module = agent_table(suite).get(agent, "").partition(":")[0]
        if module:
            importlib.import_module(module)
    except Exception:  # noqa: BLE001, S110 - an initializer that raises breaks the pool
        pass


def _next_done(finished: queue.SimpleQueue) -> Any:
    """The next finished future; waits in short steps, so a signal is handled at once."""
    while True:
        try:
            return finished.get(timeout=0.5)
        except queue.Empty:
            continue


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
