"""Run a set of episodes: executor, progress, records, resume, summary."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import __version__
from ..core import EpisodeSpec, get_suite
from ..core.record import EpisodeRecord, Usage
from .episode_worker import play_scripted
from .executors import ExecutorLost, get_executor
from .plan import make_plan
from .run_dir import RunDirectory


@dataclass
class RunResult:
    out_dir: Path
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    n_new: int
    failures: list[str]
    interrupted: bool = False
    # why the run stopped before its end when the executor was lost (None otherwise)
    stopped: str | None = None


def default_out_dir(suite: str, who: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    safe = who.replace("/", "_").replace(":", "_")
    return Path("runs") / f"{suite}-{safe}-{stamp}"


def run_episodes(
    specs: Sequence[EpisodeSpec],
    *,
    out_dir: Path,
    agent: str | None = None,
    job: Callable[..., dict[str, Any]] | None = None,
    job_args: tuple[Any, ...] = (),
    who: str | None = None,
    executor: str = "process",
    workers: int = 2,
    resume: bool = False,
    config: dict[str, Any] | None = None,
    show_progress: bool = True,
    executor_options: dict[str, Any] | None = None,
) -> RunResult:
    """Run `specs` and write the run directory.

    By default each episode is played by the scripted `agent`; front-ends that drive
    episodes differently (LLM agents) pass their own picklable `job(spec_dict, *job_args)`
    returning a record dict."""
    if job is None:
        if agent is None:
            raise ValueError("run_episodes needs an agent name or a job function")
        job, job_args = play_scripted, (agent,)
    run_dir = RunDirectory(out_dir, resume=resume)
    todo = [s for s in specs if not run_dir.is_done(s)]
    planned_from = config or {}
    run_dir.write_info(make_plan(specs, options=planned_from.get("options"),
                                 seeds=planned_from.get("seeds")),
                       who=who or agent, executor=executor, workers=workers,
                       n_planned=len(specs), config=config or {})

    execute = get_executor(executor)
    check_resumed_key(run_dir, specs)
    # to_job carries a keyed spec's key to the worker (pickled, never written down)
    jobs = [(job, (s.to_job(), *job_args)) for s in todo]
    groups = shared_work_groups(todo)
    failures: list[str] = []
    new_records: list[dict[str, Any]] = []
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(),
                        disable=not show_progress, transient=False)
    interrupted = False
    stopped: str | None = None
    try:
        with progress, run_dir.writer() as writer:
            bar = progress.add_task(f"{who or agent}", total=len(jobs))
            for i, result in execute(jobs, workers=workers, groups=groups,
                                     **(executor_options or {})):
                if isinstance(result, Exception):
                    reason = f"{type(result).__name__}: {str(result)[:500]}"
                    failures.append(f"{todo[i].task_id} seed={todo[i].seed}: {reason}")
                    # the episode still leaves a record (failed, retried on --resume)
                    result = infrastructure_failure_record(todo[i], reason, who or agent)
                writer.write(result)
                new_records.append(result)
                progress.advance(bar)
    except KeyboardInterrupt:
        interrupted = True  # what finished is kept; the summary says the run stopped
    except ExecutorLost as exc:
        interrupted, stopped = True, str(exc)  # as above; --resume plays the rest

    extra: dict[str, Any] = {"infrastructure_failures": failures} if failures else {}
    if stopped:
        extra["stopped"] = stopped
    records, summary = run_dir.finish(n_planned=len(specs), interrupted=interrupted,
                                      n_infrastructure_failures=len(failures), **extra)
    return RunResult(run_dir.path, records, summary, len(new_records), failures, interrupted,
                     stopped)


def shared_work_groups(specs: Sequence[EpisodeSpec]) -> list[str | None]:
    """Each episode's `Suite.shared_work` label (None where its suite shares nothing)."""
    suites: dict[str, Any] = {}
    labels: list[str | None] = []
    for spec in specs:
        if spec.suite not in suites:
            suites[spec.suite] = get_suite(spec.suite)
        labels.append(suites[spec.suite].shared_work(spec))
    return labels


def infrastructure_failure_record(spec: EpisodeSpec, reason: str,
                                  agent: str | None) -> dict[str, Any]:
    """A failed record for an episode that the infrastructure lost (a worker died, the
    job raised): it counts as a failure, says why, and `--resume` plays it again."""
    return EpisodeRecord(
        suite=spec.suite, task_id=spec.task_id, seed=spec.seed, options=dict(spec.options),
        agent=agent, model=None, answer=None, truth=None, passed=False, score=0.0,
        metric="", value=None, threshold=None,
        error=f"infrastructure failure: {reason}", usage=Usage(),
        world=spec.options.get("world"), protocol=spec.options.get("protocol"),
        details={"infrastructure_failure": reason}, version=__version__,
        key_id=spec.key.id if spec.key is not None else None).to_dict()


def check_resumed_key(run_dir: RunDirectory, specs: Sequence[EpisodeSpec]) -> None:
    """A resumed run keeps its key: records drawn with another key (or none) would be
    mixed into one table. Raises ValueError (one line for the user)."""
    wanted = {s.key.id if s.key is not None else None for s in specs}
    found = {r.get("key_id") for r in run_dir.records_so_far()} if run_dir.resume else set()
    if found and wanted and found != wanted:
        raise ValueError(f"{run_dir.path} holds records drawn with key {_key_name(found)}; "
                         f"this run uses key {_key_name(wanted)}; resume with the same key")


def _key_name(ids: set[str | None]) -> str:
    return ", ".join(sorted(i or "none (public draws)" for i in ids))
