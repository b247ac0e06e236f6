"""The EpisodeRecord: one JSON object per finished episode, the unit every report,
summary and leaderboard is computed from."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


@dataclass
class Usage:
    """What an episode spent. Counts are totals over the episode. `observations`,
    `cost` and `submissions` are read from the episode's budgets of those kinds (each
    quantity has one counter, its `Budget`), and `budget` lists every budget as
    `{kind, limit, spent}` (core/budget.py); a record older than budgets has none."""

    observations: float = 0
    cost: float = 0
    submissions: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    wall_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    budget: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Score:
    """A suite's verdict on an answer. `value` is the metric's value (e.g. the
    relative error), `score` a number in [0, 1] (or the suite's own scale, stated in
    its README) used for averages."""

    passed: bool
    score: float
    metric: str
    value: float | None = None
    threshold: float | None = None
    truth: Any = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpisodeRecord:
    """The result of one episode. Serialised with `to_json()`; schema versioned."""

    suite: str
    task_id: str
    seed: int
    options: dict[str, Any]
    agent: str | None
    model: str | None
    answer: Any
    truth: Any
    passed: bool
    score: float
    metric: str
    value: float | None
    threshold: float | None
    error: str | None
    usage: Usage
    world: str | None = None
    protocol: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    version: str = ""
    schema_version: int = SCHEMA_VERSION
    #: The id of the key that drew the episode (`Key.id`, a digest), None for public
    #: draws; never the key. Absent from unkeyed records, which stay as they were.
    key_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["key_id"] is None:
            del data["key_id"]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=_json_default, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        data = dict(data)
        data["usage"] = Usage(**data.get("usage", {}))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def _json_default(value: Any) -> Any:
    """Make numpy scalars and arrays JSON-able; anything else becomes its repr."""
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
    except ImportError:  # pragma: no cover
        pass
    return repr(value)


def episode_key(suite: str, task_id: str, seed: int, options: dict[str, Any]) -> str:
    """A stable identity for an episode, used by `--resume` to skip finished ones."""
    return json.dumps([suite, task_id, int(seed), options], sort_keys=True, default=str)


def read_records(path: Path, unreadable: list[int] | None = None) -> list[dict[str, Any]]:
    """All complete records in a JSONL file. A torn last line (a crash mid-write) is
    ignored, so resuming re-runs that episode; so is a line no reader could use (nested
    past what json can read, or an integer of thousands of digits). The numbers of the
    lines ignored are appended to `unreadable` when given. Anything but a regular file (a
    FIFO, a link to a device) reads as no records rather than hanging the reader."""
    if not path.is_file():
        return []
    out = []
    with path.open() as fh:
        for number, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
                if unreadable is not None:
                    unreadable.append(number)
    return out
