"""The one owner of a run directory: open (or resume) it, write run.json, append
records, finish summary.json. The scripted runner and the Inspect path both go through
it; they differ only in how records are produced."""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..core import EpisodeSpec, episode_key, get_suite
from ..core.record import read_records
from .plan import plan_digest
from .records import (
    RecordWriter,
    dedupe,
    is_infrastructure_failure,
    record_id,
    write_json,
    write_run_info,
)
from .summary import summarize_records

VERSIONED = ("numpy", "scipy", "rebound", "jax", "astropy", "celerite2", "inspect-ai")


def versions() -> dict[str, str]:
    """Versions of the packages a run's numbers depend on (written into run.json)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"discoverygym": __version__, "python": sys.version.split()[0]}
    for name in VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


class RunDirectory:
    """`records.jsonl`, `run.json` and `summary.json` of one run. Opening a directory
    that has records needs `resume`; a resumed run skips the episodes it has (one
    lost to the infrastructure is played again)."""

    def __init__(self, out_dir: Path, *, resume: bool) -> None:
        self.path = Path(out_dir)
        self.path.mkdir(parents=True, exist_ok=True)
        self.records_path = self.path / "records.jsonl"
        if self.records_path.exists() and self.records_path.stat().st_size and not resume:
            raise FileExistsError(f"{self.records_path} already has records; pass --resume "
                                  "to continue that run or choose another --out.")
        self.resume = resume
        existing = dedupe(read_records(self.records_path)) if resume else []
        self._done = {record_id(r) for r in existing if not is_infrastructure_failure(r)}
        self.started = time.perf_counter()

    def is_done(self, spec: EpisodeSpec, epoch: int = 1) -> bool:
        return (episode_key(spec.suite, spec.task_id, spec.seed, spec.options),
                epoch) in self._done

    def write_info(self, plan: dict[str, Any], **info: Any) -> None:
        """run.json: what ran and with what (creation time kept across resumes), and
        the plan with its digest (run/plan.py), which `discoverygym verify` holds the
        records to."""
        info = {"created": datetime.now(timezone.utc).isoformat(), **info,
                "plan": plan, "plan_digest": plan_digest(plan),
                "versions": versions(), "platform": platform.platform()}
        write_run_info(self.path, info, resume=self.resume)

    @contextmanager
    def writer(self) -> Iterator[RecordWriter]:
        writer = RecordWriter(self.records_path)
        try:
            yield writer
        finally:
            writer.close()

    def records_so_far(self) -> list[dict[str, Any]]:
        return dedupe(read_records(self.records_path))

    def finish(self, more: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None,
               **fields: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Write summary.json over every record of the run (this session's and a
        resumed run's earlier ones), with `fields` added and, from `more(records)`, any
        figures a front-end derives from the records; return records and summary."""
        records = self.records_so_far()
        summary = summarize_records(records)
        summary["elapsed_s"] = time.perf_counter() - self.started
        summary.update(fields)
        summary.update(more(records) if more else {})
        if records:
            summary["suite_summary"] = get_suite(records[0]["suite"]).summarize(records)
        write_json(self.path / "summary.json", summary)
        return records, summary
