"""Planet-count selection by nested sampling (dynesty) for the stargazer `nested` agent.

For each planet count k the evidence Z_k of a k-Keplerian model is estimated with
dynesty's static sampler. The priors are centred on the periods the greedy periodogram
search found (a narrow log-uniform window around each), which keeps the sampler on one
mode per planet and the run short; K is log-uniform, e and the two angles uniform, and
each instrument's jitter uniform. Instrument offsets are profiled out (weighted means),
not sampled: a small approximation that removes one dimension per instrument.

The count is chosen greedily: a planet is added while it raises ln Z by more than
`LN_Z_GAIN`. Randomness comes only from a generator seeded by the caller."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import dynesty
import numpy as np
from numpy.typing import NDArray

from ....physics.rv_fit import (
    E_MAX,
    Fit,
    Planet,
    RVData,
    evaluate,
    fit_planets,
    gaussian_log_likelihood,
    keplerian_sum,
    point_variance,
    weighted_offsets,
)

LN_Z_GAIN = 3.0     # ln Z gain a further planet must bring (Jeffreys: "strong" ~ 2.5 to 5)
E_PRIOR_MAX = 0.9   # prior upper bound on e (the generator caps e at 0.9)
TWO_PI = 2.0 * math.pi


@dataclass
class Evidence:
    """One planet count's nested-sampling result: ln Z, its error, the number of
    likelihood calls, and the maximum-likelihood fit (least-squares polished)."""

    n_planets: int
    ln_z: float
    ln_z_err: float
    n_calls: int
    fit: Fit


def period_window(period_days: float, baseline_days: float) -> tuple[float, float]:
    """Prior range of ln P around a period found by the search: a few times the
    periodogram's peak width (dP/P ~ P / baseline), at least +-1 %, at most +-20 %."""
    half = min(0.2, max(0.01, 3.0 * period_days / max(baseline_days, 1e-3)))
    return math.log(period_days) - half, math.log(period_days) + half


class KeplerianPosterior:
    """Prior transform and log-likelihood of a k-planet model, for dynesty. Parameters
    per planet: ln P, ln K, e, omega, l; then one jitter per instrument."""

    def __init__(self, data: RVData, centres: Sequence[Planet]) -> None:
        self.data = data
        self.k = len(centres)
        self.windows = [period_window(p.P_days, data.baseline_days) for p in centres]
        spread = float(np.std(data.rv_ms)) + float(np.median(data.err_ms))
        self.ln_k_range = (math.log(0.05), math.log(max(4.0 * spread, 1.0)))
        self.jitter_max = max(3.0 * spread, 1.0)
        self.ndim = 5 * self.k + data.n_inst
        # omega and l wrap around
        self.periodic = [5 * i + j for i in range(self.k) for j in (3, 4)] or None

    def prior_transform(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        x = np.empty_like(u)
        lo_k, hi_k = self.ln_k_range
        for i, (lo, hi) in enumerate(self.windows):
            b = 5 * i
            x[b] = lo + (hi - lo) * u[b]
            x[b + 1] = lo_k + (hi_k - lo_k) * u[b + 1]
            x[b + 2] = E_PRIOR_MAX * u[b + 2]
            x[b + 3] = TWO_PI * u[b + 3]
            x[b + 4] = TWO_PI * u[b + 4]
        x[5 * self.k:] = self.jitter_max * u[5 * self.k:]
        return x

    def fitter_vector(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """The same planets as the fitter's flat vector (ln P, ln K, sqrt(e) cos omega,
        sqrt(e) sin omega, l per planet)."""
        q = np.asarray(x[:5 * self.k], dtype=float).reshape(-1, 5)
        root_e = np.sqrt(q[:, 2])
        return np.column_stack([q[:, 0], q[:, 1], root_e * np.cos(q[:, 3]),
                                root_e * np.sin(q[:, 3]), q[:, 4]]).ravel()

    def log_likelihood(self, x: NDArray[np.float64]) -> float:
        data = self.data
        model = keplerian_sum(data, self.fitter_vector(x))[0] if self.k else 0.0
        var = point_variance(data, x[5 * self.k:])
        resid = data.rv_ms - model
        resid = resid - weighted_offsets(data, resid, var)[data.inst_index]
        return gaussian_log_likelihood(resid, var)

    def planets(self, x: NDArray[np.float64]) -> list[Planet]:
        q = np.asarray(x[:5 * self.k], dtype=float).reshape(-1, 5)
        return [Planet(math.exp(r[0]), math.exp(r[1]), min(float(r[2]), E_MAX), float(r[3]),
                       float(r[4])) for r in q]


def evidence(data: RVData, centres: Sequence[Planet], period_range: tuple[float, float],
             rng: np.random.Generator, nlive: int = 60, maxcall: int = 8_000) -> Evidence:
    """Nested-sampling evidence of the model with one planet near each of `centres`,
    and its best fit: the highest-likelihood sample, polished by least squares."""
    post = KeplerianPosterior(data, centres)
    sampler = dynesty.NestedSampler(
        post.log_likelihood, post.prior_transform, post.ndim, nlive=nlive,
        periodic=post.periodic, bound="multi", sample="rwalk" if post.ndim > 4 else "unif",
        bootstrap=0, rstate=rng)
    with warnings.catch_warnings():
        # the maxcall cap is deliberate: the evidence of a short run is good enough to
        # rank planet counts that differ by several units of ln Z
        warnings.simplefilter("ignore", UserWarning)
        sampler.run_nested(maxcall=maxcall, dlogz=0.5, print_progress=False)
    res = sampler.results
    best = res.samples[int(np.argmax(res.logl))]
    jitter = np.asarray(best[5 * post.k:], dtype=float)
    if post.k:
        fit = fit_planets(data, post.planets(best), period_range, jitter, rounds=2)
    else:
        fit = evaluate(data, [])
    return Evidence(post.k, float(res.logz[-1]), float(res.logzerr[-1]), int(res.ncall.sum()),
                    fit)


def select_count(results: Sequence[Evidence], gain: float = LN_Z_GAIN) -> int:
    """Planet count chosen greedily: add planets while each raises ln Z by more than
    `gain`."""
    chosen = 0
    for k in range(1, len(results)):
        if results[k].ln_z - results[k - 1].ln_z > gain:
            chosen = k
        else:
            break
    return chosen
