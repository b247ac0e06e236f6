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


#: SOTA string readers. "naturebench" reads a string exactly as NatureBench's own
#: evaluation service does (eval_service.py `_parse_one_score`), so a package scores
#: against the same SOTA here and there; it is the default for that reason: a string
#: their reader cannot read ("R2 = 0.91", ".85", "top-1 acc 76.4", a Unicode minus)
#: skips the instance (reported by `package check`) instead of being read as another
#: number. "discoverygym" is the older, more lenient reader (first number anywhere).
SOTA_PARSERS = ("naturebench", "discoverygym")
DEFAULT_SOTA_PARSER = "naturebench"

# NatureBench's reader, rule by rule (facts from their eval_service.py, not its code).
_NB_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_NB_LEADING = re.compile(_NB_NUMBER)
_NB_RANGE = re.compile(r"^\s*~?\s*([-+]?\d+(?:\.\d+)?)\s*(?:to|-|–|—)\s*~?\s*"
                       r"([-+]?\d+(?:\.\d+)?)\s*$")
_NB_BOUND = re.compile(r"^[<>]=?\s*(" + _NB_NUMBER + ")")
_NB_MEAN = re.compile(r"\bmean\s*=\s*(" + _NB_NUMBER + ")", re.IGNORECASE)
MAX_SOTA_CHARS = 10_000  # a longer "SOTA string" is no SOTA (and no regex runs on it)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def parse_sota_naturebench(text: Any, direction: str) -> float | None:
    """NatureBench's reading: a number as is; `mean=X` anywhere → X; the text before the
    first "(" with a leading "~" dropped; a whole-string range "A to B" / "A-B" (each end
    optionally "~") → B when higher is better, A when lower (the ends as written, not
    sorted); a leading bound "< X" / ">= X" → X; "a ± b" → a; else a number at the very
    start, or None. Unlike theirs, a non-finite value is None (no g can use it)."""
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return _finite(float(text))
    s = str(text).strip() if isinstance(text, str) else ""
    if not s or len(s) > MAX_SOTA_CHARS:
        return None
    if m := _NB_MEAN.search(s):
        return _finite(float(m.group(1)))
    core = s.split("(")[0].strip().lstrip("~").strip()
    if m := _NB_RANGE.match(core):
        return _finite(float(m.group(2) if direction == "higher_is_better" else m.group(1)))
    if m := _NB_BOUND.match(core):
        return _finite(float(m.group(1)))
    if "±" in core:
        core = core.split("±", 1)[0].strip().lstrip("~").strip()
    m = _NB_LEADING.match(core)
    return _finite(float(m.group(0))) if m else None


def parse_sota(text: Any, direction: str, parser: str = DEFAULT_SOTA_PARSER) -> float | None:
    """The number a SOTA string stands for, or None if it has none, read by `parser`
    (one of SOTA_PARSERS; see there for the default and why)."""
    if parser == "naturebench":
        return parse_sota_naturebench(text, direction)
    if parser != "discoverygym":
        raise ValueError(f"unknown SOTA parser {parser!r}; one of {SOTA_PARSERS}")
    return _parse_sota_lenient(text, direction)


def _parse_sota_lenient(text: Any, direction: str) -> float | None:
    """discoverygym's lenient reading: `mean=X` → X; a trailing parenthetical is
    dropped; a leading `~` stripped; a range "A to B" or "A-B" (ends optionally "~") →
    the better end for `direction`; a bound "< 1.6" → 1.6; "a ± b" → a; otherwise the
    first number anywhere. A Unicode minus (U+2212) reads as a minus."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text) if math.isfinite(text) else None
    if not isinstance(text, str) or len(text) > MAX_SOTA_CHARS:
        return None
    s = text.strip().replace("\u2212", "-")
    m = re.search(r"mean\s*=\s*(" + _NUMBER + ")", s)
    if m:
        return float(m.group(1))
    s = re.sub(r"\s*\([^()]*\)\s*$", "", s).strip()
    s = s.lstrip("~≈ ").strip()
    m = re.match(r"^(" + _NUMBER + r")\s*(?:to|–|—|-)\s*~?\s*(" + _NUMBER + r")", s)
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


def best_sota(entries: Sequence[Any], direction: str,
              parser: str = DEFAULT_SOTA_PARSER) -> float | None:
    """The best parsable SOTA value among entries ({"value", "method"} dicts, or bare
    values as NatureBench also accepts), by direction."""
    def value(e: Any) -> Any:
        return e.get("value") if isinstance(e, dict) else e

    values = [v for v in (parse_sota(value(e), direction, parser) for e in entries)
              if v is not None]
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
