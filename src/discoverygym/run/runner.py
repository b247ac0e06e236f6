"""Run a set of episodes: executor, progress, records, resume, summary."""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import __version__
from ..core import EpisodeSpec, episode_key, get_suite
from ..core.record import EpisodeRecord, Usage
from .episode_worker import play_scripted
from .executors import get_executor
from .records import (
    RecordWriter,
    dedupe,
    is_infrastructure_failure,
    read_records,
    record_key,
    write_json,
    write_run_info,
)
from .summary import summarize_records


@dataclass
class RunResult:
    out_dir: Path
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    n_new: int
    failures: list[str]
    interrupted: bool = False


def default_out_dir(suite: str, who: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    safe = who.replace("/", "_").replace(":", "_")
    return Path("runs") / f"{suite}-{safe}-{stamp}"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"discoverygym": __version__, "python": sys.version.split()[0]}
    for name in ("numpy", "scipy", "rebound", "jax", "astropy", "celerite2", "inspect-ai"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


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
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    records_path = out_dir / "records.jsonl"
    if records_path.exists() and records_path.stat().st_size and not resume:
        raise FileExistsError(f"{records_path} already has records; pass --resume to continue "
                              "that run or choose another --out.")
    existing = dedupe(read_records(records_path)) if resume else []
    # an episode lost to the infrastructure (not to its agent) is played again
    done_keys = {record_key(r) for r in existing if not is_infrastructure_failure(r)}
    todo = [s for s in specs
            if episode_key(s.suite, s.task_id, s.seed, s.options) not in done_keys]

    run_info = {
        "created": datetime.now(timezone.utc).isoformat(),
        "who": who or agent,
        "executor": executor,
        "workers": workers,
        "n_planned": len(specs),
        "config": config or {},
        "versions": _versions(),
        "platform": platform.platform(),
    }
    write_run_info(out_dir, run_info, resume=resume)

    writer = RecordWriter(records_path)
    execute = get_executor(executor)
    jobs = [(job, (s.to_dict(), *job_args)) for s in todo]
    failures: list[str] = []
    new_records: list[dict[str, Any]] = []
    started = time.perf_counter()
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(),
                        disable=not show_progress, transient=False)
    interrupted = False
    try:
        with progress:
            bar = progress.add_task(f"{who or agent}", total=len(jobs))
            for i, result in execute(jobs, workers=workers, **(executor_options or {})):
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
    finally:
        writer.close()

    records = dedupe(read_records(records_path))
    summary = summarize_records(records)
    summary["elapsed_s"] = time.perf_counter() - started
    summary["n_planned"] = len(specs)
    summary["n_infrastructure_failures"] = len(failures)
    summary["interrupted"] = interrupted
    if failures:
        summary["infrastructure_failures"] = failures
    if records:
        summary["suite_summary"] = get_suite(records[0]["suite"]).summarize(records)
    write_json(out_dir / "summary.json", summary)
    return RunResult(out_dir, records, summary, len(new_records), failures, interrupted)


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
        details={"infrastructure_failure": reason}, version=__version__).to_dict()
