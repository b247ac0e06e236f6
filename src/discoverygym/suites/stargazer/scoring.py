"""Scoring of a submitted planet list, in the published mode `v1` and our strict `v2`.

Both modes share one forward-model fit (`fit_statistics`); each mode's pass rule is one
function (`verdict_v1`, `verdict_v2`). The README quotes these rules; change them here
only together with the README.

Forward model: the sum of the submitted Keplerians plus one offset per instrument,
fitted by weighted least squares with weights 1 / (sigma_i^2 + jitter_inst^2), where
jitter_inst is the submitted jitter of that instrument (0 when not given).

v1 (the published rule, reproduced):
  rms:   unweighted residual RMS <= 1.5 x median quoted sigma.
  bic:   (BIC_null - BIC_model) / n > 0, BIC = -2 lnL + k ln n, Gaussian lnL with variance
         sigma_i^2 + jitter^2, k = 5 N_planets + N_instruments; null = one constant per
         instrument (k = N_instruments), fitted and scored with the same variances.
  match: d(t, g) = 4 rv + |ln(P_g/P_t)| + 0.5 |ln(K_g/K_t)| + 0.5 |e_g - e_t|, where rv is
         the RMS over the epochs of (curve_g - curve_t) minus its mean, divided by K_t;
         Hungarian assignment on d; pairs with d > 5 dropped;
         match = mean over kept pairs of exp(-d) - 0.25 |N_true - N_guess| >= 0.8.
  count: N_guess == N_true.
v2 (ours):
  rms:   sqrt(mean(r_i^2 / s_i^2)) <= 1.5, with s_i^2 = sigma_i^2 + the task's noise
         variance beyond the quoted sigma (true jitter^2 + activity-GP sigma^2 for
         synthetic tasks; the refit's jitter^2 for real ones; the file's jitter^2 and GP
         sigma^2 for imported ones; for imported real-data files, by default, the ML
         jitter^2 of each instrument under our rebuilt truth).
  bic:   as v1.
  match: as v1 but the mean runs over the TRUE planets: an unmatched or dropped truth
         planet contributes exp(-d) = 0; match = sum_kept exp(-d) / N_true
         - 0.25 |N_true - N_guess| >= 0.8.
  count: as v1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linear_sum_assignment

from ...physics.rv_kepler import rv_curves

MODES = ("v1", "v2")
CRITERIA = ("rms", "bic", "match", "count")
RMS_FACTOR = 1.5           # v1: x median quoted sigma; v2: on the normalised RMS
MATCH_THRESHOLD = 0.8
MAX_PAIR_DISTANCE = 5.0
COUNT_PENALTY = 0.25
LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class ScoringContext:
    """The data and hidden truth one task is scored against (precomputed once).

    `truth` is an (N, 5) planet array (kepler.PLANET_COLUMNS); `extra_var_ms2` the
    per-epoch noise variance beyond the quoted sigma that v2's RMS gate allows for."""

    times_days: NDArray[np.float64]
    rv_ms: NDArray[np.float64]
    err_ms: NDArray[np.float64]
    inst_index: NDArray[np.int64]
    inst_labels: tuple[str, ...]
    t_ref_days: float
    truth: NDArray[np.float64]
    extra_var_ms2: NDArray[np.float64]
    truth_curves: NDArray[np.float64] = field(repr=False)
    median_sigma_ms: float = 0.0


def make_context(times_days: ArrayLike, rv_ms: ArrayLike, err_ms: ArrayLike,
                 instrument: Sequence[str], truth: ArrayLike, t_ref_days: float,
                 extra_var_ms2: ArrayLike) -> ScoringContext:
    """Build the scoring context of a task (instrument labels in sorted order; jitter
    arrays passed to `fit_statistics` follow that order)."""
    labels = tuple(sorted(set(str(x) for x in instrument)))
    index = np.array([labels.index(str(x)) for x in instrument], dtype=np.int64)
    t = np.asarray(times_days, dtype=float)
    tr = np.asarray(truth, dtype=float).reshape(-1, 5)
    err = np.asarray(err_ms, dtype=float)
    extra = np.broadcast_to(np.asarray(extra_var_ms2, dtype=float), t.shape).copy()
    return ScoringContext(
        times_days=t, rv_ms=np.asarray(rv_ms, dtype=float), err_ms=err, inst_index=index,
        inst_labels=labels, t_ref_days=float(t_ref_days), truth=tr, extra_var_ms2=extra,
        truth_curves=rv_curves(t, tr, t_ref_days), median_sigma_ms=float(np.median(err)))


@dataclass(frozen=True)
class FitStatistics:
    """Everything both modes' rules need about one submission."""

    rms_ms: float
    normalised_rms: float
    delta_bic_per_point: float
    distances: NDArray[np.float64]        # (N_true, N_guess)
    pairs: tuple[tuple[int, int], ...]     # Hungarian pairs (truth, guess), before the cut
    n_true: int
    n_guess: int
    median_sigma_ms: float


@dataclass(frozen=True)
class Verdict:
    """One mode's decision on one submission."""

    mode: str
    passed: bool
    criteria: dict[str, bool]
    match: float
    n_kept_pairs: int

    def n_ok(self) -> int:
        return sum(self.criteria.values())

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "passed": self.passed, "criteria": dict(self.criteria),
                "match": self.match, "n_kept_pairs": self.n_kept_pairs}


def _offsets(ctx: ScoringContext, resid: NDArray, weight: NDArray) -> NDArray:
    n_inst = len(ctx.inst_labels)
    num = np.bincount(ctx.inst_index, weights=weight * resid, minlength=n_inst)
    den = np.bincount(ctx.inst_index, weights=weight, minlength=n_inst)
    return num / den


def _log_likelihood(resid: NDArray, var: NDArray) -> float:
    return float(-0.5 * np.sum(resid * resid / var + np.log(var) + LOG_2PI))


def match_distances(ctx: ScoringContext, guess: NDArray) -> NDArray[np.float64]:
    """The published distance d between every truth planet (rows) and every guessed
    planet (columns)."""
    guess_curves = rv_curves(ctx.times_days, guess, ctx.t_ref_days)
    diff = guess_curves[None, :, :] - ctx.truth_curves[:, None, :]
    diff = diff - diff.mean(axis=2, keepdims=True)
    k_true = ctx.truth[:, 1][:, None]
    rv_term = np.sqrt(np.mean(diff * diff, axis=2)) / k_true
    d_logp = np.abs(np.log(guess[None, :, 0] / ctx.truth[:, None, 0]))
    d_logk = np.abs(np.log(guess[None, :, 1] / ctx.truth[:, None, 1]))
    d_e = np.abs(guess[None, :, 2] - ctx.truth[:, None, 2])
    return 4.0 * rv_term + d_logp + 0.5 * d_logk + 0.5 * d_e


def fit_statistics(ctx: ScoringContext, guess: ArrayLike,
                   jitter_ms: ArrayLike | None = None) -> FitStatistics:
    """Fit the per-instrument offsets for a submitted (M, 5) planet array and per-
    instrument jitter (m/s, ordered as ctx.inst_labels), and compute the statistics both
    modes judge."""
    g = np.asarray(guess, dtype=float).reshape(-1, 5)
    n = ctx.rv_ms.size
    n_inst = len(ctx.inst_labels)
    jit = np.zeros(n_inst) if jitter_ms is None else np.asarray(jitter_ms, dtype=float)
    var = ctx.err_ms ** 2 + jit[ctx.inst_index] ** 2
    weight = 1.0 / var
    model = rv_curves(ctx.times_days, g, ctx.t_ref_days).sum(axis=0)

    resid = ctx.rv_ms - model
    resid = resid - _offsets(ctx, resid, weight)[ctx.inst_index]
    null_resid = ctx.rv_ms - _offsets(ctx, ctx.rv_ms, weight)[ctx.inst_index]

    log_n = np.log(n)
    bic_model = -2.0 * _log_likelihood(resid, var) + (5 * g.shape[0] + n_inst) * log_n
    bic_null = -2.0 * _log_likelihood(null_resid, var) + n_inst * log_n

    dist = match_distances(ctx, g)
    rows, cols = linear_sum_assignment(dist)
    expected = ctx.err_ms ** 2 + ctx.extra_var_ms2
    return FitStatistics(
        rms_ms=float(np.sqrt(np.mean(resid * resid))),
        normalised_rms=float(np.sqrt(np.mean(resid * resid / expected))),
        delta_bic_per_point=float((bic_null - bic_model) / n),
        distances=dist,
        pairs=tuple((int(r), int(c)) for r, c in zip(rows, cols, strict=True)),
        n_true=ctx.truth.shape[0], n_guess=g.shape[0], median_sigma_ms=ctx.median_sigma_ms)


def _kept_similarities(stats: FitStatistics) -> list[float]:
    return [float(np.exp(-stats.distances[r, c])) for r, c in stats.pairs
            if stats.distances[r, c] <= MAX_PAIR_DISTANCE]


def verdict_v1(stats: FitStatistics) -> Verdict:
    """The published rule (see the module docstring)."""
    kept = _kept_similarities(stats)
    penalty = COUNT_PENALTY * abs(stats.n_true - stats.n_guess)
    match = (float(np.mean(kept)) if kept else 0.0) - penalty
    criteria = {
        "rms": stats.rms_ms <= RMS_FACTOR * stats.median_sigma_ms,
        "bic": stats.delta_bic_per_point > 0.0,
        "match": match >= MATCH_THRESHOLD,
        "count": stats.n_guess == stats.n_true,
    }
    return Verdict("v1", all(criteria.values()), criteria, match, len(kept))


def verdict_v2(stats: FitStatistics) -> Verdict:
    """Our strict rule (see the module docstring)."""
    kept = _kept_similarities(stats)
    penalty = COUNT_PENALTY * abs(stats.n_true - stats.n_guess)
    match = float(np.sum(kept)) / stats.n_true - penalty
    criteria = {
        "rms": stats.normalised_rms <= RMS_FACTOR,
        "bic": stats.delta_bic_per_point > 0.0,
        "match": match >= MATCH_THRESHOLD,
        "count": stats.n_guess == stats.n_true,
    }
    return Verdict("v2", all(criteria.values()), criteria, match, len(kept))


RULES = {"v1": verdict_v1, "v2": verdict_v2}


def n_recovered(stats: FitStatistics) -> int:
    """Truth planets recovered one by one: their Hungarian partner alone reaches the match
    threshold, exp(-d) >= MATCH_THRESHOLD (d <= 0.22). The same in both modes; it is
    computed from the truth, so it goes into records and summaries, never into feedback."""
    return sum(1 for r, c in stats.pairs
               if float(np.exp(-stats.distances[r, c])) >= MATCH_THRESHOLD)


def evaluate(ctx: ScoringContext, guess: ArrayLike,
             jitter_ms: ArrayLike | None = None) -> dict[str, Verdict]:
    """Both modes' verdicts on one submission: {"v1": Verdict, "v2": Verdict}."""
    stats = fit_statistics(ctx, guess, jitter_ms)
    return {mode: rule(stats) for mode, rule in RULES.items()}
