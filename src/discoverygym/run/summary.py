"""Aggregate records into summary.json: pass rates overall and per task, usage means,
plus whatever the suite adds."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from ..core.budget import read_budgets

#: How many distinct limits of one budget kind the summary lists.
MAX_LIMITS_LISTED = 10


def pass_rate_stderr(n_passed: int, n: int) -> float:
    """Standard error of a pass rate (binomial)."""
    if n == 0:
        return float("nan")
    p = n_passed / n
    return math.sqrt(p * (1 - p) / n)


def summarize_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Suite-independent aggregates. Missing answers count as failures because every
    episode has a record with passed=False."""
    n = len(records)
    n_passed = sum(1 for r in records if r.get("passed"))
    per_task: dict[str, dict[str, Any]] = defaultdict(lambda: {"n": 0, "passed": 0})
    for r in records:
        entry = per_task[r["task_id"]]
        entry["n"] += 1
        entry["passed"] += int(bool(r.get("passed")))
    usage_keys = ("observations", "cost", "submissions", "tool_calls", "wall_s",
                  "input_tokens", "output_tokens", "usd")
    mean_usage = {
        k: (sum(float(r["usage"].get(k, 0) or 0) for r in records) / n if n else 0.0)
        for k in usage_keys
    }
    first = records[0] if records else {}
    return {
        "suite": first.get("suite"),
        "agent": first.get("agent"),
        "model": first.get("model"),
        "protocol": first.get("protocol"),
        "n_episodes": n,
        "n_passed": n_passed,
        "pass_rate": n_passed / n if n else 0.0,
        "pass_rate_stderr": pass_rate_stderr(n_passed, n) if n else None,
        "mean_score": sum(float(r.get("score", 0)) for r in records) / n if n else 0.0,
        "n_errors": sum(1 for r in records if r.get("error")),
        "max_observations": max((r["usage"].get("observations", 0) for r in records), default=0),
        "mean_usage": mean_usage,
        "budgets": summarize_budgets(records),
        "per_task": dict(sorted(per_task.items())),
    }


def summarize_budgets(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per budget kind, from the records' `usage.budget` (never from a protocol's name):
    the episodes that had it (`n`), its limits (distinct, sorted, None for no limit, at
    most MAX_LIMITS_LISTED), and the mean and largest spent. Records older than budgets,
    or whose budgets are malformed, add nothing."""
    spent: dict[str, list[float]] = defaultdict(list)
    limits: dict[str, set[float | None]] = defaultdict(set)
    for record in records:
        for budget in read_budgets(record.get("usage")):
            spent[budget["kind"]].append(budget["spent"])
            if len(limits[budget["kind"]]) < MAX_LIMITS_LISTED:
                limits[budget["kind"]].add(budget["limit"])
    return {kind: {"n": len(values),
                   "limits": sorted(limits[kind], key=lambda x: (x is None, x or 0.0)),
                   "mean_spent": _finite_or_none(sum(values) / len(values)),
                   "max_spent": max(values)}
            for kind, values in sorted(spent.items())}


def _finite_or_none(number: float) -> float | None:
    """A mean of finite amounts can still overflow (hostile 1e308s): None, not Infinity,
    which strict JSON readers refuse."""
    return number if math.isfinite(number) else None
