"""The run directory: records.jsonl (appended and flushed per episode), run.json and
summary.json."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core import episode_key
from ..core.record import _json_default


def record_key(record: dict[str, Any]) -> str:
    return episode_key(record["suite"], record["task_id"], record["seed"], record["options"])


def record_id(record: dict[str, Any]) -> tuple[str, int]:
    """An episode's identity in a run: its key and its epoch (1 unless a run plays each
    episode several times)."""
    return record_key(record), int((record.get("details") or {}).get("epoch", 1))


class RecordWriter:
    """Appends records one line at a time. Each line is flushed to the OS at once, so a
    crash of the run (driver or worker) loses at most the episode in flight; fsync, which
    guards against the machine itself going down, runs at most every `fsync_every_s`
    (and on close) because a per-line fsync costs milliseconds per episode."""

    def __init__(self, path: Path, fsync_every_s: float = 1.0) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._fh = path.open("a")
        self._fsync_every_s = fsync_every_s
        self._last_fsync = time.monotonic()

    def _repair_tail(self) -> None:
        # A crash can leave a partial last line; cut it so the next record starts clean.
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(cut)

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, default=_json_default, sort_keys=True) + "\n")
        self._fh.flush()
        if time.monotonic() - self._last_fsync >= self._fsync_every_s:
            os.fsync(self._fh.fileno())
            self._last_fsync = time.monotonic()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def write_run_info(out_dir: Path, run_info: dict[str, Any], *, resume: bool) -> None:
    """Write run.json; a resumed run keeps its first creation time and notes it."""
    run_json = out_dir / "run.json"
    if resume and run_json.exists():
        previous = json.loads(run_json.read_text())
        run_info["resumed_from"] = previous.get("created")
        run_info["created"] = previous.get("created", run_info["created"])
    write_json(run_json, run_info)


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_json_default, sort_keys=True) + "\n")
    tmp.replace(path)


def dedupe(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per episode (key and epoch): the first one written wins, except that a
    record of an infrastructure failure gives way to a later real one (a resumed run's
    retry)."""
    position: dict[tuple[str, int], int] = {}
    out: list[dict[str, Any]] = []
    for rec in records:
        key = record_id(rec)
        if key not in position:
            position[key] = len(out)
            out.append(rec)
        elif is_infrastructure_failure(out[position[key]]) and not is_infrastructure_failure(rec):
            out[position[key]] = rec
    return out


def is_infrastructure_failure(record: dict[str, Any]) -> bool:
    """Whether the record stands for an episode lost to the infrastructure."""
    return bool((record.get("details") or {}).get("infrastructure_failure"))
