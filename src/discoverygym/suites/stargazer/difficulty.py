"""The published difficulty rubric and the tiers built on it.

score = min(4, N_planets) + SNR term + resonances + coverage + epochs + activity;
difficulty = clip(round(score), 1, 10); tiers easy 1-2, medium 3-6, hard 7-10."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

RESONANT_RATIOS = (2.0, 1.5, 5.0 / 3.0)
RESONANCE_TOLERANCE = 0.03
TIERS = {"easy": (1, 2), "medium": (3, 6), "hard": (7, 10)}


def count_resonances(periods_days: Sequence[float]) -> int:
    """Adjacent period pairs (sorted) within 3 % of 2:1, 3:2 or 5:3 (at most 2 count)."""
    p = np.sort(np.asarray(periods_days, dtype=float))
    n = 0
    for inner, outer in zip(p[:-1], p[1:], strict=True):
        ratio = outer / inner
        if any(abs(ratio / r - 1.0) <= RESONANCE_TOLERANCE for r in RESONANT_RATIOS):
            n += 1
    return min(n, 2)


def snr_term(snr: float) -> int:
    """min K / (sigma_w + jitter): 0 if > 5, 1 if > 2, 2 if > 1, else 3."""
    if snr > 5:
        return 0
    if snr > 2:
        return 1
    if snr > 1:
        return 2
    return 3


def coverage_term(coverage: float) -> int:
    """baseline / inner period: 0 if >= 3, 1 if >= 2, else 2."""
    return 0 if coverage >= 3 else (1 if coverage >= 2 else 2)


def epochs_term(n_obs: int) -> int:
    """Number of epochs: 0 if >= 80, 1 if >= 50, 2 if >= 30, else 3."""
    if n_obs >= 80:
        return 0
    if n_obs >= 50:
        return 1
    return 2 if n_obs >= 30 else 3


def activity_term(sigma_gp_ms: float | None, sigma_white_ms: float) -> int:
    """Only with an activity GP: sigma_gp / sigma_w: 1 if < 0.5, 2 if < 1, else 3."""
    if sigma_gp_ms is None:
        return 0
    ratio = sigma_gp_ms / sigma_white_ms
    return 1 if ratio < 0.5 else (2 if ratio < 1 else 3)


def difficulty(periods_days: Sequence[float], k_ms: Sequence[float], sigma_white_ms: float,
               jitter_ms: float, baseline_days: float, n_obs: int,
               sigma_gp_ms: float | None) -> dict[str, Any]:
    """The rubric's terms, raw score and difficulty (1..10) of one system.

    With several instruments the caller passes the epoch-averaged quoted sigma and
    jitter as `sigma_white_ms` and `jitter_ms`."""
    periods = np.asarray(periods_days, dtype=float)
    snr = float(np.min(k_ms)) / (sigma_white_ms + jitter_ms)
    coverage = baseline_days / float(np.min(periods))
    terms = {
        "planets": min(4, len(periods)),
        "snr": snr_term(snr),
        "resonances": count_resonances(periods),
        "coverage": coverage_term(coverage),
        "epochs": epochs_term(n_obs),
        "activity": activity_term(sigma_gp_ms, sigma_white_ms),
    }
    score = sum(terms.values())
    return {"terms": terms, "raw_score": score, "difficulty": int(np.clip(round(score), 1, 10)),
            "snr_like": snr, "coverage_inner_periods": coverage, "n_obs": int(n_obs),
            "gp_used": sigma_gp_ms is not None}


def tier_of(level: int) -> str:
    """The tier (easy / medium / hard) of a difficulty level 1..10."""
    for name, (lo, hi) in TIERS.items():
        if lo <= level <= hi:
            return name
    raise ValueError(f"difficulty {level} outside 1..10")
