"""The audit's attacks on what core guards for every suite: the tool-argument check
(`tools.validate_arguments`, `bounded`), the budget and `record()`. Declared here,
beside what they attack (see audit_registry)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from .audit_registry import AttackFamily, AuditTarget, Outcome, guard
from .budget import without_clocks

MAX_ERROR_CHARS = 1000


def hostile_values() -> dict[str, Any]:
    """Tool arguments no honest agent sends: huge, deep, long, out of float range, NaN."""
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    return {"10 MB string": "x" * 10_000_000, "5000-deep list": deep,
            "10**6-element list": [0] * 1_000_000, "10**400": 10**400, "NaN": math.nan}


def _charged(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The usage entries a call changed, but the calls counted and the clocks (wall
    time, and a solve time's spent, which runs down during any call)."""
    before = {**before, "budget": without_clocks(before.get("budget", []))}
    after = {**after, "budget": without_clocks(after.get("budget", []))}
    return [k for k in before if k not in ("tool_calls", "tool_errors", "wall_s")
            and before[k] != after[k]]


def argument_attacks(target: AuditTarget) -> list[Outcome]:
    """Each hostile value into the first property of each tool of one episode, then the
    record. Expected: a short error, nothing charged, the episode goes on, and the
    record is a failure, never an exception."""
    outcomes = []
    episode = target.make_episode()
    values = hostile_values()
    for spec in episode.tool_specs():
        names = list(spec.parameters.get("properties") or {}) or ["x"]
        for label, value in values.items():
            def attack(spec=spec, name=names[0], value=value) -> tuple[bool, str]:
                before = asdict(episode.usage)
                result = episode.call(spec.name, {name: value})
                charged = _charged(before, asdict(episode.usage))
                short = len(result.text) <= MAX_ERROR_CHARS
                ok = result.is_error and short and not charged and not episode.done
                return ok, (f"error={result.is_error}, {len(result.text)} chars, charged="
                            f"{charged or 'nothing'}, finished={episode.done}")
            outcomes.append(guard("arguments", f"{spec.name}({names[0]}={label})",
                                  "short error, nothing charged, episode goes on", attack))

    def record() -> tuple[bool, str]:
        rec = episode.record(agent="audit")
        json.dumps(rec.to_dict(), default=str)
        return rec.passed is False, f"record written, passed={rec.passed}"
    outcomes.append(guard("arguments", "record() after the attacks",
                          "a failed record, never an exception", record))
    return outcomes


ATTACKS = (
    AttackFamily("arguments", "oversized, deeply nested, huge-list, 10**400 and NaN "
                 "arguments to every tool", argument_attacks),
)
