"""The evaluation service behind both the in-process `evaluate` tool and the HTTP
server: a solve timer that pauses while the evaluator runs, and an attempt log in
SQLite (every attempt, failed or not) from which the best score is recomputed, so a
restart loses nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.budget import Budget
from ...core.safe_paths import Caps, UnsafePath, snapshot_tree
from ...naturegym.format.evaluator_runner import Evaluation, run_evaluator
from ...naturegym.format.package import Package


class SolveTimer:
    """The solve time: a `Budget` of kind `solve_s` whose spending is done by the clock.
    `pause()`/`resume()` bracket evaluations, whose time is not spent; `budget.spent`
    holds the seconds settled at the last pause, and `elapsed()` adds the stretch
    running now. Elapsed time is persisted by the service so a restarted server
    continues where it stopped."""

    def __init__(self, total_s: float, elapsed_s: float = 0.0) -> None:
        self.budget = Budget("solve_s", float(total_s), float(elapsed_s))
        self._running_since: float | None = time.monotonic()

    @property
    def total_s(self) -> float:
        return float(self.budget.limit or 0.0)

    @property
    def paused(self) -> bool:
        return self._running_since is None

    def elapsed(self) -> float:
        running = 0.0 if self._running_since is None else time.monotonic() - self._running_since
        return self.budget.spent + running

    def remaining(self) -> float:
        return max(0.0, self.total_s - self.elapsed())

    def pause(self) -> None:
        if self._running_since is not None:
            self.budget.elapse(time.monotonic() - self._running_since)
            self._running_since = None

    def resume(self) -> None:
        if self._running_since is None:
            self._running_since = time.monotonic()

    def state(self) -> dict[str, Any]:
        return {"elapsed_s": self.elapsed(), "remaining_s": self.remaining(),
                "total_s": self.total_s, "paused": self.paused}


@dataclass
class Attempt:
    number: int
    ok: bool
    score: float
    g: dict[str, float]
    raw: dict[str, Any]
    error: str | None
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"attempt": self.number, "ok": self.ok, "score": self.score, "g": self.g,
                "raw_scores": self.raw, "error": self.error, "duration_s": self.duration_s}


class AttemptLog:
    """Append-only attempt log in SQLite (WAL; committed per attempt)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("""CREATE TABLE IF NOT EXISTS attempts (
            number INTEGER PRIMARY KEY, at REAL, ok INTEGER, score REAL, g TEXT, raw TEXT,
            error TEXT, duration_s REAL)""")
        self._db.execute("CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT)")
        self._lock = threading.Lock()

    def append(self, ev: Evaluation) -> Attempt:
        with self._lock:
            number = self.count() + 1
            self._db.execute(
                "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (number, time.time(), int(ev.ok), ev.score, json.dumps(ev.g),
                 json.dumps(ev.raw, default=str), ev.error, ev.duration_s))
        return Attempt(number, ev.ok, ev.score, ev.g, ev.raw, ev.error, ev.duration_s)

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM attempts").fetchone()[0])

    def attempts(self) -> list[Attempt]:
        rows = self._db.execute("SELECT number, ok, score, g, raw, error, duration_s "
                                "FROM attempts ORDER BY number").fetchall()
        return [Attempt(n, bool(ok), s, json.loads(g), json.loads(raw), err, d)
                for n, ok, s, g, raw, err, d in rows]

    def best(self) -> Attempt | None:
        """The attempt with the highest aggregate among successful ones (earliest on ties)."""
        ok = [a for a in self.attempts() if a.ok]
        return max(ok, key=lambda a: (a.score, -a.number)) if ok else None

    def get_state(self, key: str, default: float = 0.0) -> float:
        row = self._db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return float(row[0]) if row else default

    def set_state(self, key: str, value: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO state VALUES (?, ?)", (key, str(value)))

    def close(self) -> None:
        self._db.close()


class BudgetExpired(RuntimeError):
    pass


class OutputsRefused(ValueError):
    """The outputs hold a link, FIFO, device or hard link, or break the size caps; no
    evaluation ran and nothing was charged. `refused` lists (path, why)."""

    def __init__(self, message: str, refused: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.refused = refused


#: What one evaluation copies out of the agent's output folder.
OUTPUT_CAPS = Caps(max_files=10_000, max_total_bytes=256 * 1024 * 1024,
                   max_file_bytes=128 * 1024 * 1024)


class EvaluationService:
    """Evaluate an output directory against a package, keep the log and the timer."""

    def __init__(self, package: Package, output_dir: Path, log_path: Path, *,
                 total_s: float | None = None, evaluator_timeout_s: float = 300.0,
                 python: str | None = None) -> None:
        self.package = package
        self.python = python  # the evaluator's interpreter (None: discoverygym's)
        self.output_dir = Path(output_dir)
        self.log = AttemptLog(log_path)
        self.timer = SolveTimer(total_s if total_s is not None else package.runtime_s,
                                elapsed_s=self.log.get_state("elapsed_s"))
        self.evaluator_timeout_s = evaluator_timeout_s
        self._eval_lock = threading.Lock()
        self._work = Path(log_path).parent
        #: A private copy of the outputs that earned the best score (and of the final
        #: outputs): regular files only, for the validity checks and the record.
        self.best_outputs = self._work / "best_outputs"
        self.final_outputs = self._work / "final_outputs"

    def _snapshot(self, output_dir: Path, keep: list[str] | None = None) -> Path:
        """A private copy of the regular files of `output_dir`, taken without following
        any link (optionally only the top-level entries named in `keep`); raises
        OutputsRefused for links, FIFOs, devices, hard links or a tree over the caps."""
        target = Path(tempfile.mkdtemp(prefix="snapshot-", dir=self._work))
        shutil.rmtree(target)
        try:
            snap = snapshot_tree(output_dir, target, OUTPUT_CAPS)
        except UnsafePath as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise OutputsRefused(f"outputs refused, nothing was evaluated or charged: {exc}",
                                 [("", str(exc))]) from None
        if snap.refused:
            shutil.rmtree(target, ignore_errors=True)
            listed = "; ".join(f"{path} ({why})" for path, why in snap.refused[:10])
            raise OutputsRefused(
                "outputs refused, nothing was evaluated or charged: OUTPUT_DIR may hold "
                f"only regular files and folders, found {listed}", snap.refused)
        if keep is not None:
            for entry in target.iterdir():
                if entry.name not in keep:
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        return target

    def evaluate(self, output_dir: Path | None = None) -> dict[str, Any]:
        """Score the outputs (the development instances only, when the package has a
        split); the timer pauses while the evaluator runs. Raises BudgetExpired once the
        solve time is spent, OutputsRefused (free) for outputs that are not plain files."""
        if self.timer.remaining() <= 0:
            raise BudgetExpired("the solve time is used up")
        split = "development" if self.package.has_split else None
        with self._eval_lock:  # one evaluator at a time: attempts are numbered in order
            self.timer.pause()
            try:
                snapshot = self._snapshot(output_dir or self.output_dir,
                                          self.package.split_names("development")
                                          if split else None)
                try:
                    ev = run_evaluator(self.package, snapshot, split=split,
                                       timeout_s=self.evaluator_timeout_s,
                                       python=self.python)
                    attempt = self.log.append(ev)
                    best = self.log.best()
                    if best is not None and best.number == attempt.number:
                        shutil.rmtree(self.best_outputs, ignore_errors=True)
                        snapshot.rename(self.best_outputs)
                finally:
                    shutil.rmtree(snapshot, ignore_errors=True)
            finally:
                self.log.set_state("elapsed_s", self.timer.elapsed())
                self.timer.resume()
        return {**attempt.to_dict(), "best_so_far": best.to_dict() if best else None,
                "skipped_instances": ev.skipped, "split": split}

    def final_evaluation(self, output_dir: Path | None = None) -> Evaluation:
        """The one evaluation on the held-out evaluation instances (packages with a
        split), run at the end whatever time is left; never reported during the solve.
        Its outputs are kept in `final_outputs`."""
        with self._eval_lock:
            shutil.rmtree(self.final_outputs, ignore_errors=True)
            snapshot = self._snapshot(output_dir or self.output_dir)
            snapshot.rename(self.final_outputs)
            return run_evaluator(self.package, self.final_outputs, split="evaluation",
                                 timeout_s=self.evaluator_timeout_s, python=self.python)

    def best_score(self) -> dict[str, Any]:
        best = self.log.best()
        return {"attempts": self.log.count(), "best": best.to_dict() if best else None}

    def close(self) -> None:
        self.log.set_state("elapsed_s", self.timer.elapsed())
        self.log.close()


# ---- NatureBench's reply fields -------------------------------------------------------
# Their agents read these names (facts from their eval_service.py); the server answers
# them beside ours, so a NatureBench agent's calls work unchanged.

def naturebench_evaluate_fields(result: dict[str, Any]) -> dict[str, Any]:
    """Their /evaluate fields for one of our `evaluate` results: per_instance_improvement,
    aggregate_improvement (None when the evaluation failed), best_aggregate_improvement,
    best_attempt."""
    best = result.get("best_so_far")
    return {"per_instance_improvement": result["g"] if result["ok"] else None,
            "aggregate_improvement": result["score"] if result["ok"] else None,
            "best_aggregate_improvement": best["score"] if best else None,
            "best_attempt": best["attempt"] if best else None}


def naturebench_best_fields(service: EvaluationService) -> dict[str, Any]:
    """Their /best_score fields."""
    best = service.log.best()
    return {"best_attempt": best.number if best else None,
            "best_aggregate_improvement": best.score if best else None,
            "best_per_instance_improvement": best.g if best else {},
            "best_raw_scores": best.raw if best else {},
            "total_attempts": service.log.count()}


def naturebench_time_fields(timer: SolveTimer) -> dict[str, Any]:
    """Their /time_remaining fields (seconds rounded to 0.1 as theirs are)."""
    return {"elapsed_seconds": round(timer.elapsed(), 1),
            "remaining_seconds": round(timer.remaining(), 1),
            "timeout_seconds": timer.total_s, "is_paused": timer.paused,
            "should_skip": False}
