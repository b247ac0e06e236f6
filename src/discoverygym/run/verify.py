"""`discoverygym verify RUN`: replay every record of a run and confirm its truth and score.

Commit, then reveal: a keyed evaluation publishes its key's commitment first; after it,
the key is revealed and anyone can rebuild each recorded episode with it (the record
holds the public identity, suite, task, seed and options, and the key's id), re-score
the recorded answer through the rebuilt episode and compare truth, passed and score
with what the record says. A record with no key id is replayed the same way with
public draws.

Records are read as hostile input: each line is bounded in size and nesting, and a
record that cannot be read, rebuilt or re-scored is reported as such, never trusted."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import EpisodeSpec
from ..core.bounded import UnsafeInput, check_value, clip
from ..core.keys import Key
from ..core.record import _json_default

MAX_LINE_CHARS = 8_000_000
MAX_RECORDS = 100_000

OK = "ok"
MISMATCH = "mismatch"
NOT_REPLAYABLE = "not replayable"


@dataclass
class Verdict:
    """The outcome of replaying one record."""

    line: int
    episode: str
    status: str       # OK, MISMATCH or NOT_REPLAYABLE
    detail: str = ""


class KeyMismatch(ValueError):
    """The key given is not the key the records were drawn with (one line)."""


def read_bounded_records(path: Path) -> list[tuple[int, dict[str, Any] | str]]:
    """(line number, record) per line of a records file; an unreadable line gives the
    reason instead of a record."""
    out: list[tuple[int, dict[str, Any] | str]] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if number > MAX_RECORDS:
                out.append((number, f"more than {MAX_RECORDS} records; the rest unread"))
                break
            if len(line) > MAX_LINE_CHARS:
                out.append((number, f"line longer than {MAX_LINE_CHARS} characters"))
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                out.append((number, f"not a JSON record ({type(exc).__name__})"))
                continue
            out.append((number, record if isinstance(record, dict) else "not a JSON object"))
    return out


def check_key(records: list[tuple[int, dict[str, Any] | str]], key: Key | None) -> None:
    """Refuse a key that did not draw the records (or none where they were keyed)."""
    ids = {r.get("key_id") for _, r in records if isinstance(r, dict) and r.get("key_id")}
    if not ids:
        return
    if key is None:
        raise KeyMismatch(f"the records were drawn with key {', '.join(sorted(map(str, ids)))}; "
                          "give it with --key-file")
    if ids != {key.id}:
        raise KeyMismatch(f"the records were drawn with key {', '.join(sorted(map(str, ids)))}; "
                          f"the key given is {key.id}")


def verify_records(path: Path, key: Key | None) -> list[Verdict]:
    """Replay every record of `path` (records.jsonl). Raises KeyMismatch before any
    replay when `key` is not the records' key."""
    records = read_bounded_records(path)
    check_key(records, key)
    return [replay(number, record, key) for number, record in records]


def replay(number: int, record: dict[str, Any] | str, key: Key | None) -> Verdict:
    """Rebuild one recorded episode, re-score its answer, compare with the record."""
    if isinstance(record, str):
        return Verdict(number, "?", NOT_REPLAYABLE, record)
    name = clip(f"{record.get('suite')}/{record.get('task_id')} seed={record.get('seed')}", 120)
    try:
        spec = _spec_of(record, key)
    except (TypeError, ValueError, UnsafeInput) as exc:
        return Verdict(number, name, NOT_REPLAYABLE, f"not a record: {clip(str(exc), 200)}")
    if (record.get("details") or {}).get("infrastructure_failure"):
        return Verdict(number, name, NOT_REPLAYABLE, "never played (infrastructure failure)")
    try:
        episode = spec.build()
    except Exception as exc:  # noqa: BLE001 - a record naming no episode is reported
        return Verdict(number, name, MISMATCH,
                       f"no such episode: {type(exc).__name__}: {clip(str(exc), 200)}")
    answer = record.get("answer")
    try:
        check_value(answer, what="the recorded answer")
        if answer is None:  # nothing was submitted: the record must be a failure
            truth, passed, score = _canonical(episode.replay_truth()), False, 0.0
        else:
            verdict = episode.replay_score(answer)
            truth, passed, score = (_canonical(verdict.truth), bool(verdict.passed),
                                    float(verdict.score))
    except Exception as exc:  # noqa: BLE001 - a hostile answer or a scorer failure
        return Verdict(number, name, NOT_REPLAYABLE,
                       f"cannot re-score: {type(exc).__name__}: {clip(str(exc), 200)}")
    problems = []
    if _canonical(record.get("truth")) != truth:
        problems.append("truth differs")
    if episode.writes_files():
        detail = "; ".join(problems) or "truth confirmed"
        return Verdict(number, name, MISMATCH if problems else NOT_REPLAYABLE,
                       f"{detail}; the score reads files the agent left, which the record "
                       "does not hold")
    if bool(record.get("passed")) != passed:
        problems.append(f"passed {record.get('passed')!r}, replay {passed!r}")
    if not _same_number(record.get("score"), score):
        problems.append(f"score {clip(repr(record.get('score')), 40)}, replay {score!r}")
    return Verdict(number, name, MISMATCH if problems else OK, "; ".join(problems))


def _spec_of(record: dict[str, Any], key: Key | None) -> EpisodeSpec:
    suite, task_id, seed = record.get("suite"), record.get("task_id"), record.get("seed")
    options = record.get("options") or {}
    if not isinstance(suite, str) or not isinstance(task_id, str):
        raise ValueError("suite and task_id must be strings")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise ValueError("seed must be a non-negative integer")
    if not isinstance(options, dict):
        raise ValueError("options must be an object")
    check_value(options, what="the options")
    return EpisodeSpec(suite, task_id, seed, dict(options),
                       key if record.get("key_id") else None)


def _canonical(value: Any) -> str:
    """A JSON text of `value` as a record holds it (numpy made plain, keys sorted)."""
    return json.dumps(value, default=_json_default, sort_keys=True)


def _same_number(recorded: Any, replayed: float) -> bool:
    if isinstance(recorded, bool) or not isinstance(recorded, (int, float)):
        return False
    return math.isclose(float(recorded), replayed, rel_tol=1e-9, abs_tol=1e-12)
