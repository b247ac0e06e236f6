"""Scoring against the published state of the art (NatureBench rules).

Per instance g = dir · (m − m_sota) / |m_sota| with dir = +1 when higher is better and
−1 when lower is better. The task score is the mean g over primary instances, a failed
or missing instance counting −1. These functions are the only place the rule lives.

g is unbounded below: an answer a thousand times worse than the SOTA scores about
−1000, far below a missing answer (−1). The published formula is kept, and beside it
g_clipped floors each instance at −1 (a wild answer is worth no less than none), so one
wild instance cannot swamp a mean. Surpass, Match and the buckets use the published g
(thresholds are not swamped); means and medians use g_clipped."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

FAILED_G = -1.0
SURPASS_G = 0.1

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def parse_sota(text: Any, direction: str) -> float | None:
    """The number a SOTA string stands for, or None if it has none.

    `mean=X` → X; a trailing parenthetical is dropped; a leading `~` stripped; a range
    "A to B" or "A-B" → the better end for `direction`; a bound "< 1.6" → 1.6; "a ± b"
    → a; otherwise the first number."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text) if math.isfinite(text) else None
    if not isinstance(text, str):
        return None
    s = text.strip()
    m = re.search(r"mean\s*=\s*(" + _NUMBER + ")", s)
    if m:
        return float(m.group(1))
    s = re.sub(r"\s*\([^()]*\)\s*$", "", s).strip()
    s = s.lstrip("~≈ ").strip()
    m = re.match(r"^(" + _NUMBER + r")\s*(?:to|–|—|-)\s*(" + _NUMBER + r")", s)
    if m:
        a, b = float(m.group(1)), float(m.group(2))
        return max(a, b) if direction == "higher_is_better" else min(a, b)
    m = re.match(r"^(?:<=?|>=?|≤|≥)\s*(" + _NUMBER + ")", s)
    if m:
        return float(m.group(1))
    m = re.match(r"^(" + _NUMBER + r")\s*(?:±|\+/-|\+-)", s)
    if m:
        return float(m.group(1))
    # A digit glued to letters ("R2", "H2O") is part of a name, not a value.
    m = re.search(r"(?<![A-Za-z\d.])" + _NUMBER, s)
    return float(m.group(0)) if m else None


def best_sota(entries: Sequence[dict[str, Any]], direction: str) -> float | None:
    """The best parsable SOTA value among entries ({"value", "method"}), by direction."""
    values = [v for v in (parse_sota(e.get("value"), direction) for e in entries) if v is not None]
    if not values:
        return None
    return max(values) if direction == "higher_is_better" else min(values)


def instance_g(measured: float | None, sota: float, direction: str) -> float:
    """g for one instance; a missing or non-finite measurement counts as a failure (−1)."""
    if measured is None or not math.isfinite(measured):
        return FAILED_G
    sign = 1.0 if direction == "higher_is_better" else -1.0
    return sign * (measured - sota) / abs(sota)


def task_score(instance_gs: Iterable[float]) -> float:
    """Mean g over a task's scored primary instances (failed ones already −1)."""
    values = list(instance_gs)
    return statistics.fmean(values) if values else FAILED_G


def clip_g(g: float) -> float:
    """g_clipped = max(g, −1): a wild answer counts as no worse than a missing one."""
    return max(g, FAILED_G) if not math.isnan(g) else FAILED_G


def clipped_task_score(instance_gs: Iterable[float]) -> float:
    """Mean of the clipped instance g's (≥ −1, and ≥ max(task score, −1))."""
    return task_score(clip_g(g) for g in instance_gs)


@dataclass(frozen=True)
class TaskResult:
    task: str
    domain: str
    g: float | None  # None: the task never produced a valid evaluation (counts −1)
    #: the record's g_clipped; None (older records): max(g, −1)
    g_clipped: float | None = None

    @property
    def clipped(self) -> float:
        if self.g is None:
            return FAILED_G
        return clip_g(self.g if self.g_clipped is None else self.g_clipped)


def bucket(g: float) -> str:
    """Distribution bucket of a task score, consistent with Match (g ≥ 0) and
    Surpass (g > 0.1)."""
    if g < -0.5:
        return "< -0.5"
    if g < 0:
        return "-0.5..0"
    if g <= SURPASS_G:
        return "0..0.1"
    if g <= 0.5:
        return "0.1..0.5"
    return "> 0.5"


BUCKET_LABELS = ("< -0.5", "-0.5..0", "0..0.1", "0.1..0.5", "> 0.5")


def _rates(results: Sequence[TaskResult]) -> dict[str, Any]:
    gs = [FAILED_G if r.g is None else r.g for r in results]
    clipped = [r.clipped for r in results]
    n = len(gs)
    if n == 0:
        return {"n_tasks": 0}
    return {
        "n_tasks": n,
        "surpass_rate": sum(g > SURPASS_G for g in gs) / n,
        "match_rate": sum(g >= 0 for g in gs) / n,
        "mean_g": statistics.fmean(clipped),
        "median_g": statistics.median(clipped),
        "mean_g_published": statistics.fmean(gs),
        "median_g_published": statistics.median(gs),
        "completion_rate": sum(r.g is not None for r in results) / n,
        "buckets": {label: sum(bucket(g) == label for g in gs) for label in BUCKET_LABELS},
    }


def aggregate(results: Sequence[TaskResult]) -> dict[str, Any]:
    """Surpass (g > 0.1), Match (g ≥ 0), mean and median g_clipped (invalid = −1; the
    unclipped figures as *_published), completion rate, distribution buckets (by the
    published g), and the same per domain."""
    out = _rates(results)
    domains: dict[str, list[TaskResult]] = {}
    for r in results:
        domains.setdefault(r.domain, []).append(r)
    out["per_domain"] = {d: _rates(rs) for d, rs in sorted(domains.items())}
    return out
