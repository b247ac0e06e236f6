"""Radial-velocity fitting tools, shared by stargazer's baseline agents and the packages
suite's RV baseline. (Over 500 lines: one fitter whose pieces share the same
parameterisation and variable projection.)

Periodograms of residuals (generalised Lomb-Scargle, astropy), Keplerian least squares
(scipy) in well-conditioned parameters, per-instrument offsets and jitter, greedy planet
addition gated by the Bayesian information criterion, and alias / harmonic checks.

Parameters of one planet in the fitter: ln P (days), ln K (m/s), sqrt(e) cos(omega),
sqrt(e) sin(omega) and the mean longitude l (radians) at t_ref, the first epoch. The
instrument offsets are not free parameters: for given planets they are the weighted means
of the residuals per instrument (variable projection), exactly as the evaluator fits them.
Jitter per instrument is fitted by maximum likelihood, alternating with the planets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from astropy.timeseries import LombScargle
from numpy.typing import NDArray
from scipy.optimize import leastsq, minimize_scalar

from .kepler import TWO_PI, eccentric_anomaly_sin_cos
from .rv_kepler import rv_keplerian

SIDEREAL_DAY_DAYS = 0.99726958  # one sidereal day: nightly sampling aliases at 1.0027 / day
YEAR_DAYS = 365.25
E_MAX = 0.9  # the fitter never goes beyond this eccentricity (the generator's cap)
# Eccentricity prior in the least squares and the model comparison: -2 ln of the
# (1 - e)^(b - 1) factor of the Beta(0.867, 3.03) distribution of exoplanet eccentricities
# (Kipping 2013, also the generator's), i.e. -E_PENALTY ln(1 - e) per planet. It counters
# the upward bias of the maximum-likelihood e at low signal-to-noise and the spurious
# near-parabolic orbits that fit a few outlying points; log-likelihoods never include it.
E_PENALTY = 2.0 * (3.03 - 1.0)
# Bounds on sqrt(e) cos(omega), sqrt(e) sin(omega); e itself is capped at E_MAX in the model.
_H_BOUND = math.sqrt(E_MAX)
_LN_K_BOUNDS = (math.log(1e-3), math.log(1e4))


@dataclass(frozen=True)
class RVData:
    """Radial velocities of one star: times (days), RVs and quoted errors (m/s), an
    instrument index per point, the instrument labels and the reference epoch."""

    t_days: NDArray[np.float64]
    rv_ms: NDArray[np.float64]
    err_ms: NDArray[np.float64]
    inst_index: NDArray[np.int64]
    inst_labels: tuple[str, ...]
    t_ref_days: float

    @classmethod
    def from_arrays(cls, t_days: Sequence[float], rv_ms: Sequence[float],
                    err_ms: Sequence[float], instrument: Sequence[str] | None = None,
                    t_ref_days: float | None = None) -> RVData:
        """Build from plain arrays; instrument labels default to one instrument."""
        t = np.asarray(t_days, dtype=float)
        order = np.argsort(t, kind="stable")
        labels = np.asarray(["inst_A"] * len(t) if instrument is None else instrument, dtype=str)
        names = tuple(sorted(set(labels.tolist())))
        index = np.array([names.index(x) for x in labels], dtype=np.int64)
        return cls(t_days=t[order], rv_ms=np.asarray(rv_ms, dtype=float)[order],
                   err_ms=np.asarray(err_ms, dtype=float)[order], inst_index=index[order],
                   inst_labels=names,
                   t_ref_days=float(t.min() if t_ref_days is None else t_ref_days))

    @classmethod
    def from_workspace(cls, workspace: dict[str, Any]) -> RVData:
        """Build from a stargazer episode's workspace (`times`, `rv`, `err`, `instrument`,
        `t_ref`)."""
        return cls.from_arrays(workspace["times"], workspace["rv"], workspace["err"],
                               workspace["instrument"], workspace.get("t_ref"))

    @property
    def n(self) -> int:
        return len(self.t_days)

    @property
    def n_inst(self) -> int:
        return len(self.inst_labels)

    @property
    def baseline_days(self) -> float:
        return float(self.t_days.max() - self.t_days.min())


@dataclass(frozen=True)
class Planet:
    """One Keplerian orbit: period (days), semi-amplitude (m/s), eccentricity, argument of
    periastron and mean longitude at t_ref (radians)."""

    P_days: float
    K_ms: float
    e: float
    omega_rad: float
    l_rad: float

    def submission(self) -> dict[str, float]:
        """The planet in the stargazer `submit` format."""
        return {"P_days": float(self.P_days), "K_ms": float(self.K_ms), "e": float(self.e),
                "omega_rad": float(self.omega_rad % TWO_PI), "l_rad": float(self.l_rad % TWO_PI)}

    def params(self) -> list[float]:
        root_e = math.sqrt(max(self.e, 0.0))
        return [math.log(self.P_days), math.log(self.K_ms), root_e * math.cos(self.omega_rad),
                root_e * math.sin(self.omega_rad), self.l_rad]

    @classmethod
    def from_params(cls, p: Sequence[float]) -> Planet:
        h, k = float(p[2]), float(p[3])
        e = min(h * h + k * k, E_MAX)
        omega = math.atan2(k, h) if e > 0 else 0.0
        return cls(math.exp(p[0]), math.exp(p[1]), e, omega, float(p[4]))


@dataclass
class Fit:
    """A fitted model: planets, per-instrument offsets and jitter (m/s), the maximised
    log-likelihood, and the number of free parameters."""

    planets: list[Planet]
    offsets_ms: NDArray[np.float64]
    jitter_ms: NDArray[np.float64]
    log_likelihood: float
    n_params: int
    tags: dict[str, Any] = field(default_factory=dict)

    def bic(self, n_points: int) -> float:
        """Bayesian information criterion, -2 ln L + k ln n, plus the eccentricity prior
        penalty -E_PENALTY ln(1 - e) of each planet."""
        return (-2.0 * self.log_likelihood + self.n_params * math.log(n_points)
                + sum(-E_PENALTY * math.log1p(-min(p.e, E_MAX)) for p in self.planets))

    def submission(self, data: RVData) -> dict[str, Any]:
        """Arguments for the stargazer `submit` tool."""
        return {"planets": [p.submission() for p in sorted(self.planets, key=lambda q: q.P_days)],
                "jitter_ms": {label: float(j) for label, j in zip(data.inst_labels,
                                                                  self.jitter_ms, strict=True)}}


# ---- forward model, offsets, jitter, likelihood ---------------------------------------------

def model_rv(data: RVData, planets: Sequence[Planet]) -> NDArray[np.float64]:
    """Sum of the planets' Keplerian RVs (m/s) at the data's epochs (no offsets)."""
    total = np.zeros(data.n)
    for p in planets:
        total += rv_keplerian(data.t_days, p.P_days, p.K_ms, p.e, p.omega_rad, p.l_rad,
                              data.t_ref_days)
    return total


def _orbit_arrays(x: NDArray[np.float64]) -> tuple[NDArray, ...]:
    """Per-planet P, K, e, omega (and the raw h, k) from a flat parameter vector."""
    q = np.asarray(x, dtype=float).reshape(-1, 5)
    h, k = q[:, 2], q[:, 3]
    e_raw = h * h + k * k
    e = np.minimum(e_raw, E_MAX)
    omega = np.arctan2(k, h)
    return np.exp(q[:, 0]), np.exp(q[:, 1]), e, omega, q[:, 4], h, k, e_raw


def keplerian_sum(data: RVData, x: NDArray[np.float64],
                  jacobian: bool = False) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """Sum of Keplerian RVs (m/s) for a flat vector of fitter parameters (five per planet:
    ln P, ln K, sqrt(e) cos omega, sqrt(e) sin omega, l), and optionally its analytic
    derivatives with respect to those parameters (shape n x 5 N_planets)."""
    total, jac, _ = _keplerian_sum(data, x, jacobian)
    return total, jac


def _keplerian_sum(data: RVData, x: NDArray[np.float64], jacobian: bool,
                   start: NDArray[np.float64] | None = None
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64]]:
    """`keplerian_sum`, and the eccentric anomalies (planet x epoch) it solved Kepler's
    equation for, from `start` when given (see `eccentric_anomaly_sin_cos`)."""
    period, amp, e, omega, lam, h, k, e_raw = _orbit_arrays(x)
    tau = data.t_days - data.t_ref_days
    n_motion = TWO_PI / period
    mean_anom = (lam - omega)[:, None] + n_motion[:, None] * tau[None, :]
    big_e, sin_e, cos_e = eccentric_anomaly_sin_cos(mean_anom, e[:, None], start=start)
    ec = e[:, None]
    root = np.sqrt(1.0 - ec * ec)
    den = 1.0 - ec * cos_e
    cos_nu = (cos_e - ec) / den
    sin_nu = root * sin_e / den
    cos_w, sin_w = np.cos(omega)[:, None], np.sin(omega)[:, None]
    cos_nuw = cos_nu * cos_w - sin_nu * sin_w
    rv = amp[:, None] * (cos_nuw + ec * cos_w)
    total = rv.sum(axis=0)
    if not jacobian:
        return total, None, big_e
    sin_nuw = sin_nu * cos_w + cos_nu * sin_w
    dnu_dm = (1.0 + ec * cos_nu) ** 2 / root ** 3
    dnu_de = sin_nu * (2.0 + ec * cos_nu) / root ** 2
    kk = amp[:, None]
    jac = np.empty((len(period), 5, data.n))  # (planet, param, point)
    d_m = -kk * sin_nuw * dnu_dm                      # d rv / d M
    jac[:, 0] = d_m * (-n_motion[:, None] * tau[None, :])  # M = l - omega + 2 pi tau / P
    jac[:, 1] = rv
    jac[:, 4] = d_m
    d_omega = -kk * sin_nuw - d_m - kk * ec * sin_w   # at fixed l (M moves with omega)
    d_e = kk * (-sin_nuw * dnu_de + cos_w)
    inside = (e_raw < E_MAX)[:, None]
    d_e = np.where(inside, d_e, 0.0)
    e_safe = np.maximum(e_raw, 1e-300)[:, None]
    hh, kq = h[:, None], k[:, None]
    d_h = d_e * 2.0 * hh + np.where(e_raw[:, None] > 0, d_omega * (-kq) / e_safe, 0.0)
    d_k = d_e * 2.0 * kq + np.where(e_raw[:, None] > 0, d_omega * hh / e_safe, 0.0)
    jac[:, 2] = d_h
    jac[:, 3] = d_k
    return total, jac.reshape(-1, data.n).T, big_e


def _model_from_params(data: RVData, x: NDArray[np.float64]) -> NDArray[np.float64]:
    return keplerian_sum(data, x)[0]


def weighted_offsets(data: RVData, residual_ms: NDArray[np.float64],
                     variance: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-instrument offsets (m/s) minimising the weighted squared residuals."""
    w = 1.0 / variance
    num = np.bincount(data.inst_index, weights=w * residual_ms, minlength=data.n_inst)
    den = np.bincount(data.inst_index, weights=w, minlength=data.n_inst)
    return num / den


def point_variance(data: RVData, jitter_ms: NDArray[np.float64]) -> NDArray[np.float64]:
    """Variance per point: quoted error squared plus its instrument's jitter squared."""
    return data.err_ms ** 2 + np.asarray(jitter_ms)[data.inst_index] ** 2


def gaussian_log_likelihood(residual_ms: NDArray[np.float64],
                            variance: NDArray[np.float64]) -> float:
    """ln L of independent Gaussian residuals with the given variances."""
    return float(-0.5 * np.sum(residual_ms ** 2 / variance + np.log(TWO_PI * variance)))


def fit_jitter(data: RVData, residual_ms: NDArray[np.float64]) -> NDArray[np.float64]:
    """Maximum-likelihood jitter (m/s) per instrument for fixed residuals (offsets
    already removed)."""
    jitter = np.zeros(data.n_inst)
    for j in range(data.n_inst):
        sel = data.inst_index == j
        r2, s2 = residual_ms[sel] ** 2, data.err_ms[sel] ** 2
        if np.mean(r2) <= np.mean(s2) * 0.5:
            continue

        def neg_lnl(s: float, r2: NDArray = r2, s2: NDArray = s2) -> float:
            v = s2 + s * s
            return float(np.sum(r2 / v + np.log(v)))

        upper = float(np.sqrt(np.max(r2))) + 1e-9
        best = minimize_scalar(neg_lnl, bounds=(0.0, upper), method="bounded",
                               options={"xatol": 1e-4 * upper + 1e-6})
        jitter[j] = best.x if best.fun < neg_lnl(0.0) else 0.0
    return jitter


def evaluate(data: RVData, planets: Sequence[Planet], jitter_ms: NDArray[np.float64] | None = None,
             refit_jitter: bool = True) -> Fit:
    """Offsets (and, optionally, jitter) for fixed planets, and the resulting fit."""
    jitter = np.zeros(data.n_inst) if jitter_ms is None else np.asarray(jitter_ms, dtype=float)
    signal = data.rv_ms - model_rv(data, planets)
    for _ in range(3 if refit_jitter else 1):
        var = point_variance(data, jitter)
        offsets = weighted_offsets(data, signal, var)
        resid = signal - offsets[data.inst_index]
        if not refit_jitter:
            break
        jitter = fit_jitter(data, resid)
    var = point_variance(data, jitter)
    offsets = weighted_offsets(data, signal, var)
    resid = signal - offsets[data.inst_index]
    return Fit(list(planets), offsets, jitter, gaussian_log_likelihood(resid, var),
               5 * len(planets) + 2 * data.n_inst)


def residuals(data: RVData, fit: Fit) -> NDArray[np.float64]:
    """Data minus the fitted planets and offsets (m/s)."""
    return data.rv_ms - model_rv(data, fit.planets) - fit.offsets_ms[data.inst_index]


# ---- least squares ------------------------------------------------------------------------

def _bounds(n_planets: int, period_range: tuple[float, float]) -> tuple[NDArray, NDArray]:
    lo = [math.log(period_range[0]), _LN_K_BOUNDS[0], -_H_BOUND, -_H_BOUND, -np.inf]
    hi = [math.log(period_range[1]), _LN_K_BOUNDS[1], _H_BOUND, _H_BOUND, np.inf]
    return np.array(lo * n_planets), np.array(hi * n_planets)


def _clip_into(x: NDArray, lo: NDArray, hi: NDArray) -> NDArray:
    span = np.where(np.isfinite(hi - lo), hi - lo, 1.0)
    return np.clip(x, lo + 1e-9 * span, hi - 1e-9 * span)


def eccentricity_penalty(h: NDArray[np.float64], k: NDArray[np.float64],
                         weight: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Residuals whose squares sum to -weight ln(1 - e) per planet (e = h^2 + k^2, capped
    at E_MAX), as r_h = h g(e), r_k = k g(e) with g^2 = -weight ln(1 - e) / e, which is
    smooth at e = 0; and their derivatives with respect to h and k (the 2x2 block of
    each planet, shape (N, 2, 2))."""
    e_raw = h * h + k * k
    e = np.minimum(e_raw, E_MAX)
    small = e < 1e-4
    e_safe = np.where(small, 0.5, e)
    f = np.where(small, 1.0 + e / 2.0 + e * e / 3.0, -np.log1p(-e_safe) / e_safe)
    df = np.where(small, 0.5 + 2.0 * e / 3.0,
                  (e_safe / (1.0 - e_safe) + np.log1p(-e_safe)) / e_safe ** 2)
    df = np.where(e_raw < E_MAX, df, 0.0)
    g = np.sqrt(weight * f)
    dg = weight * df / (2.0 * g)
    res = np.stack([h * g, k * g], axis=1).ravel()
    block = np.empty((len(h), 2, 2))
    block[:, 0, 0] = g + 2.0 * h * h * dg
    block[:, 0, 1] = 2.0 * h * k * dg
    block[:, 1, 0] = 2.0 * h * k * dg
    block[:, 1, 1] = g + 2.0 * k * k * dg
    return res, block


def _penalty_rows(h: Sequence[float], k: Sequence[float], weight: float
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """`eccentricity_penalty` in scalar arithmetic, for the few planets of a fit (numpy's
    per-call cost dominates at that size): the residuals (2 N) and their Jacobian with
    respect to the fitter parameters (2 N x 5 N, nonzero on sqrt(e) cos/sin omega)."""
    n = len(h)
    res = np.empty(2 * n)
    jac = np.zeros((2 * n, 5 * n))
    for i, (hi, ki) in enumerate(zip(h, k, strict=True)):
        hi, ki = float(hi), float(ki)
        e_raw = hi * hi + ki * ki
        e = min(e_raw, E_MAX)
        if e < 1e-4:
            f, df = 1.0 + e / 2.0 + e * e / 3.0, 0.5 + 2.0 * e / 3.0
        else:
            f, df = -math.log1p(-e) / e, (e / (1.0 - e) + math.log1p(-e)) / (e * e)
        if not e_raw < E_MAX:
            df = 0.0
        g = math.sqrt(weight * f)
        dg = weight * df / (2.0 * g)
        res[2 * i], res[2 * i + 1] = hi * g, ki * g
        cross = 2.0 * hi * ki * dg
        jac[2 * i, 5 * i + 2], jac[2 * i, 5 * i + 3] = g + 2.0 * hi * hi * dg, cross
        jac[2 * i + 1, 5 * i + 2], jac[2 * i + 1, 5 * i + 3] = cross, g + 2.0 * ki * ki * dg
    return res, jac


def least_squares_planets(data: RVData, start: Sequence[Planet], jitter_ms: NDArray[np.float64],
                          period_range: tuple[float, float], fixed: Sequence[Planet] = (),
                          max_nfev: int = 400,
                          e_penalty: float = E_PENALTY) -> tuple[list[Planet], float]:
    """Weighted least squares of the `start` planets (all five parameters each) with the
    `fixed` planets held and the offsets profiled, plus the eccentricity penalty
    `-e_penalty ln(1 - e)` per planet. Returns the planets and the penalised chi-square."""
    var = point_variance(data, jitter_ms)
    inv_sigma = 1.0 / np.sqrt(var)
    base = data.rv_ms - model_rv(data, fixed)

    # offsets are weighted means per instrument: a linear projection, applied to the
    # residuals and to each Jacobian column alike
    weight = 1.0 / var
    one_hot = np.eye(data.n_inst)[data.inst_index]
    # (weighted means, n_inst x n, then each point's own: O(n), where the n x n matrix
    # of the projection cost O(n^2) per residual and O(n^2 N) per Jacobian)
    mean_of = (one_hot * weight[:, None]).T / (one_hot.T @ weight)[:, None]
    inst = data.inst_index

    def project(v: NDArray) -> NDArray:
        return (mean_of @ v)[inst]


    n_start = len(start)
    lo, hi = _bounds(n_start, period_range)
    lo = np.where(np.isfinite(lo), lo, -1e3)
    hi = np.where(np.isfinite(hi), hi, 1e3)
    weight_e = max(e_penalty, 1e-12)
    idx_h = np.arange(n_start) * 5 + 2
    n_par = 5 * n_start
    n_data = data.n
    # One model evaluation serves the residuals and the Jacobian at the same point
    # (MINPACK asks for both); Kepler's equation is solved from the previous
    # evaluation's eccentric anomalies, a few Newton steps away
    state: dict[str, Any] = {"key": None, "big_e": None}

    def at(xc: NDArray) -> dict[str, Any]:
        key = xc.tobytes()
        if state["key"] != key:
            total, d, state["big_e"] = _keplerian_sum(data, xc, True, state["big_e"])
            r = base - total
            pen, pen_jac = _penalty_rows(xc[idx_h], xc[idx_h + 1], weight_e)
            state.update(key=key, r=(r - project(r)) * inv_sigma, d=d, pen=pen,
                         pen_jac=pen_jac)
        return state

    # Levenberg-Marquardt (MINPACK) has no bounds but far less overhead per step than
    # the bounded trust-region method. The model is evaluated at the parameters clipped
    # into range, and a steep linear wall pushes any excursion back, so the residuals
    # stay finite; e is capped inside the model and the e penalty keeps sqrt(e) cos/sin
    # omega from drifting.
    wall = 1e3

    def resid(x: NDArray) -> NDArray:
        xc = np.clip(x, lo, hi)
        st = at(xc)
        return np.concatenate([st["r"], st["pen"], wall * (x - xc)])

    def jac(x: NDArray) -> NDArray:
        xc = np.clip(x, lo, hi)
        inside = (x == xc).astype(float)
        st = at(xc)
        d = st["d"]
        out = np.zeros((n_data + 2 * n_start + n_par, n_par))
        out[:n_data] = -(d - project(d)) * inv_sigma[:, None] * inside[None, :]
        out[n_data:n_data + 2 * n_start] = st["pen_jac"] * inside[None, :]
        diag = np.arange(n_par)
        out[n_data + 2 * n_start + diag, diag] = wall * (1.0 - inside)
        return out

    x0 = _clip_into(np.concatenate([p.params() for p in start]), lo, hi)
    # sqrt(e) cos/sin omega have zero gradient at e = 0 exactly: start circular orbits
    # at e = 0.01 (omega = 0) so that the fit can leave them
    e0 = x0[idx_h] ** 2 + x0[idx_h + 1] ** 2
    x0[idx_h] = np.where(e0 < 1e-4, 0.1, x0[idx_h])
    # MINPACK's lmder through `leastsq`, as `least_squares(method="lm", x_scale="jac")`
    # calls it (diag=None, factor 100, gtol 1e-8), without that wrapper's per-call cost
    x, _, info, _, _ = leastsq(resid, x0, Dfun=jac, full_output=True, ftol=1e-9, xtol=1e-8,
                               gtol=1e-8, maxfev=max_nfev, factor=100.0, diag=None)
    f = info["fvec"]
    x = _clip_into(x, lo, hi)
    planets = [Planet.from_params(x[i:i + 5]) for i in range(0, len(x), 5)]
    return planets, float(np.dot(f, f))


def fit_planets(data: RVData, start: Sequence[Planet], period_range: tuple[float, float],
                jitter_ms: NDArray[np.float64] | None = None, rounds: int = 3,
                max_nfev: int = 200, e_penalty: float = E_PENALTY) -> Fit:
    """Joint fit of all planets, alternating least squares with the jitter (the
    penalised least squares may trade a little likelihood for a lower e; `e_penalty`
    as in `least_squares_planets`)."""
    jitter = np.zeros(data.n_inst) if jitter_ms is None else np.asarray(jitter_ms, dtype=float)
    planets = list(start)
    fit = evaluate(data, planets, jitter)
    for _ in range(rounds):
        planets, _ = least_squares_planets(data, planets, jitter, period_range,
                                           max_nfev=max_nfev, e_penalty=e_penalty)
        new = evaluate(data, planets, jitter)
        if not np.isfinite(new.log_likelihood):
            break
        jitter = new.jitter_ms
        converged = abs(new.log_likelihood - fit.log_likelihood) < 1e-2
        fit = new
        if converged:
            break
    return fit


# ---- periodograms and starts ---------------------------------------------------------------

def frequency_grid(data: RVData, period_range: tuple[float, float],
                   oversample: float = 8.0) -> NDArray[np.float64]:
    """Frequencies (1/day) from 1/P_max to 1/P_min, spaced 1/(oversample * baseline)."""
    f_lo, f_hi = 1.0 / period_range[1], 1.0 / period_range[0]
    df = 1.0 / (oversample * max(data.baseline_days, 1e-3))
    n = int(min(max((f_hi - f_lo) / df, 200), 200_000))
    return np.linspace(f_lo, f_hi, n)


def periodogram(data: RVData, residual_ms: NDArray[np.float64], jitter_ms: NDArray[np.float64],
                freq: NDArray[np.float64]) -> NDArray[np.float64]:
    """Generalised Lomb-Scargle power (floating mean, weights 1/(sigma^2 + jitter^2)) of
    residuals whose per-instrument weighted means have been removed."""
    var = point_variance(data, jitter_ms)
    centred = residual_ms - weighted_offsets(data, residual_ms, var)[data.inst_index]
    ls = LombScargle(data.t_days, centred, np.sqrt(var), fit_mean=True, center_data=True)
    return np.asarray(ls.power(freq, method="fast" if data.n * len(freq) > 5e6 else "cython",
                               assume_regular_frequency=True))


def peak_frequencies(freq: NDArray[np.float64], power: NDArray[np.float64],
                     n_peaks: int) -> list[float]:
    """The `n_peaks` highest local maxima of a periodogram, highest first."""
    inner = (power[1:-1] >= power[:-2]) & (power[1:-1] >= power[2:])
    idx = np.flatnonzero(inner) + 1
    for edge in (0, len(power) - 1):
        idx = np.append(idx, edge)
    idx = idx[np.argsort(power[idx])[::-1]]
    return [float(freq[i]) for i in idx[:n_peaks]]


def alias_periods(period_days: float, daily: bool) -> list[float]:
    """Harmonics (P/2, 2P, P/3) and the yearly and, for nightly sampled data, daily
    aliases of a period."""
    f = 1.0 / period_days
    out = [period_days / 2.0, 2.0 * period_days, period_days / 3.0]
    aliases = [f + 1.0 / YEAR_DAYS, f - 1.0 / YEAR_DAYS]
    if daily:
        aliases += [f + 1.0 / SIDEREAL_DAY_DAYS, abs(f - 1.0 / SIDEREAL_DAY_DAYS)]
    out += [1.0 / a for a in aliases if a > 0]
    return out


def sinusoid_start(data: RVData, residual_ms: NDArray[np.float64],
                   jitter_ms: NDArray[np.float64], period_days: float) -> Planet:
    """Circular orbit at a period, amplitude and phase from a weighted linear fit of a
    sinusoid plus per-instrument offsets to the residuals."""
    var = point_variance(data, jitter_ms)
    theta = TWO_PI * (data.t_days - data.t_ref_days) / period_days
    design = np.column_stack([np.cos(theta), np.sin(theta),
                              np.eye(data.n_inst)[data.inst_index]])
    w = 1.0 / np.sqrt(var)
    coef, *_ = np.linalg.lstsq(design * w[:, None], residual_ms * w, rcond=None)
    a, b = coef[0], coef[1]
    # K cos(l + theta) = K cos(l) cos(theta) - K sin(l) sin(theta)
    return Planet(period_days, max(float(np.hypot(a, b)), 1e-2), 0.0, 0.0,
                  float(math.atan2(-b, a)))


# e grid of the linear Keplerian scan; the mean anomaly at t_ref is scanned on N_M0 values
SCAN_ECCENTRICITIES = (0.0, 0.2, 0.4, 0.6, 0.8)
SCAN_N_M0 = 12


def keplerian_scan(data: RVData, residual_ms: NDArray[np.float64],
                   jitter_ms: NDArray[np.float64], periods_days: Sequence[float],
                   eccentricities: Sequence[float] = SCAN_ECCENTRICITIES,
                   n_m0: int = SCAN_N_M0) -> tuple[NDArray[np.float64], list[Planet]]:
    """Best single Keplerian per period on a grid of (e, M0), with K and omega solved
    linearly: for fixed P, e and M0 the curve K [cos(nu + omega) + e cos omega] is
    a cos(nu) + b sin(nu) + const with a = K cos omega, b = -K sin omega, so a weighted
    linear fit (offsets per instrument profiled) gives K, omega and the chi-square.
    Returns the chi-square and the planet for each period."""
    periods = np.asarray(periods_days, dtype=float)
    ecc = np.asarray(eccentricities, dtype=float)
    m0 = TWO_PI * np.arange(n_m0) / n_m0
    tau = data.t_days - data.t_ref_days
    shape = (len(periods), len(ecc), n_m0, data.n)
    mean_anom = m0[None, :, None] + TWO_PI * tau[None, None, :] / periods[:, None, None]
    cos_nu, sin_nu = np.empty(shape), np.empty(shape)
    for j, e in enumerate(ecc):  # one e at a time: contiguous arrays and a scalar e
        _, sin_e, cos_e = eccentric_anomaly_sin_cos(mean_anom, e, starter="markley")
        den = 1.0 - e * cos_e
        cos_nu[:, j] = (cos_e - e) / den
        sin_nu[:, j] = math.sqrt(1.0 - e * e) * sin_e / den

    var = point_variance(data, jitter_ms)
    w = 1.0 / var
    one_hot = np.eye(data.n_inst)[data.inst_index]
    w_sum = w @ one_hot

    def centred(x: NDArray) -> NDArray:  # remove per-instrument weighted means
        means = ((x * w) @ one_hot) / w_sum
        return x - means @ one_hot.T

    c, s, r = centred(cos_nu), centred(sin_nu), centred(np.asarray(residual_ms, dtype=float))
    cc, ss, cs = (c * c * w).sum(-1), (s * s * w).sum(-1), (c * s * w).sum(-1)
    cr, sr, rr = (c * r * w).sum(-1), (s * r * w).sum(-1), float((r * r * w).sum())
    det = cc * ss - cs * cs
    ok = det > 1e-12 * np.maximum(cc * ss, 1e-300)
    det = np.where(ok, det, 1.0)
    a = np.where(ok, (ss * cr - cs * sr) / det, 0.0)
    b = np.where(ok, (cc * sr - cs * cr) / det, 0.0)
    chi2 = np.where(ok, rr - (a * cr + b * sr), rr)

    flat = chi2.reshape(len(periods), -1)
    best = np.argmin(flat, axis=1)
    planets = []
    for i, j in enumerate(best):
        ie, im = np.unravel_index(j, chi2.shape[1:])
        ai, bi = float(a[i, ie, im]), float(b[i, ie, im])
        omega = math.atan2(-bi, ai)
        planets.append(Planet(float(periods[i]), max(math.hypot(ai, bi), 1e-2), float(ecc[ie]),
                              omega, omega + float(m0[im])))
    return flat[np.arange(len(periods)), best], planets


# ---- greedy search -------------------------------------------------------------------------

MIN_PERIOD_RATIO = 1.1  # closest period ratio of two planets the search will propose

@dataclass
class SearchSettings:
    """Knobs of the greedy search (periods in days)."""

    period_range: tuple[float, float] = (1.0, 1000.0)
    max_planets: int = 6
    n_peaks: int = 6          # periodogram peaks scanned per added planet
    n_refine: int = 3         # best scanned candidates refined by least squares
    n_joint: int = 2          # best refined candidates refitted jointly with the others
    max_nfev: int = 60        # per single-planet least-squares run
    joint_nfev: int = 150     # per joint least-squares run
    delta_bic: float = 0.0
    daily_aliases: bool = False
    extra_planets: int = 1    # models fitted beyond the first rejected one (fallbacks)


def candidate_periods(data: RVData, residual_ms: NDArray[np.float64],
                      jitter_ms: NDArray[np.float64], settings: SearchSettings,
                      freq: NDArray[np.float64], taken_days: Sequence[float] = ()) -> list[float]:
    """Periods worth trying for the next planet: the highest periodogram peaks of the
    residuals, plus the aliases and harmonics of the highest one. Periods within a
    ratio of MIN_PERIOD_RATIO of a planet already in the model are skipped (such
    pairs are not stable; the generator rejects them too)."""
    power = periodogram(data, residual_ms, jitter_ms, freq)
    lo, hi = settings.period_range
    free = np.ones(len(freq), dtype=bool)
    for p in taken_days:
        free &= np.abs(np.log(freq * p)) > math.log(MIN_PERIOD_RATIO)
    if not free.any():
        return []
    peaks = [1.0 / f for f in peak_frequencies(freq[free], power[free], settings.n_peaks)]
    out = list(peaks)
    for p in alias_periods(peaks[0], settings.daily_aliases):
        if (lo < p < hi and all(abs(math.log(p / q)) > 0.01 for q in out)
                and all(abs(math.log(p / q)) > math.log(MIN_PERIOD_RATIO) for q in taken_days)):
            out.append(p)
    return out


def best_new_planet(data: RVData, current: Fit, settings: SearchSettings,
                    freq: NDArray[np.float64]) -> list[Fit]:
    """Candidate fits with one more planet than `current`, best first: candidate periods
    scanned with the linear Keplerian grid, the best few refined alone by least squares
    (current planets held), the best of those refitted jointly with everything."""
    resid = residuals(data, current)
    periods = candidate_periods(data, resid, current.jitter_ms, settings, freq,
                                [p.P_days for p in current.planets])
    if not periods:
        return []
    chi2, scanned = keplerian_scan(data, resid, current.jitter_ms, periods)
    order = np.argsort(chi2)
    refined: list[tuple[float, Planet]] = []
    for i in order[:settings.n_refine]:
        (planet,), c2 = least_squares_planets(data, [scanned[i]], current.jitter_ms,
                                              settings.period_range, fixed=current.planets,
                                              max_nfev=settings.max_nfev)
        refined.append((c2, planet))
    refined.sort(key=lambda x: x[0])
    chosen: list[Planet] = []
    for _, planet in refined:
        if all(abs(math.log(planet.P_days / q.P_days)) > 0.02 for q in chosen):
            chosen.append(planet)
        if len(chosen) == settings.n_joint:
            break
    fits = [fit_planets(data, [*current.planets, p], settings.period_range, current.jitter_ms,
                        max_nfev=settings.joint_nfev)
            for p in chosen]
    fits.sort(key=lambda f: -f.log_likelihood)
    kept = [f for f in fits if plausible(data, f)]
    if not kept and not current.planets:
        kept = [f for f in fits if np.isfinite(f.log_likelihood)][:1]  # always one planet
    return kept


def alias_variants(data: RVData, fit: Fit, settings: SearchSettings, i: int,
                   only_better: bool) -> list[Fit]:
    """Joint refits with planet i moved to its aliases and harmonics (started from the
    linear Keplerian scan of the residuals without it), best first. With `only_better`,
    only alternatives whose scan beats the planet's own period are refitted."""
    current = fit.planets[i]
    lo, hi = settings.period_range
    others = [p for j, p in enumerate(fit.planets) if j != i]
    alts = [p for p in alias_periods(current.P_days, settings.daily_aliases)
            if lo < p < hi and all(abs(math.log(p / q.P_days)) > math.log(MIN_PERIOD_RATIO)
                                   for q in others)]
    if not alts:
        return []
    rest = evaluate(data, others, fit.jitter_ms, refit_jitter=False)
    # each alternative on a few frequencies around it: an alias of a slightly wrong
    # period is off by the same frequency error, which a single trial would not forgive
    df = 1.0 / (4.0 * max(data.baseline_days, 1e-3))
    shifts = df * np.arange(-3, 4)
    trial_periods = [current.P_days]
    for p in alts:
        f = 1.0 / p + shifts
        trial_periods += [1.0 / x for x in f if x > 0]
    chi2_all, scanned_all = keplerian_scan(data, residuals(data, rest), fit.jitter_ms,
                                           trial_periods)
    chi2, scanned = [chi2_all[0]], [scanned_all[0]]
    start = 1
    for p in alts:
        n_f = int(np.sum(1.0 / p + shifts > 0))
        j = start + int(np.argmin(chi2_all[start:start + n_f]))
        chi2.append(chi2_all[j])
        scanned.append(scanned_all[j])
        start += n_f
    chi2 = np.asarray(chi2)
    out = []
    for k in np.argsort(chi2[1:]) + 1:
        if only_better and chi2[k] >= chi2[0]:
            break
        trial = fit_planets(data, [*others, scanned[k]], settings.period_range, fit.jitter_ms,
                            max_nfev=settings.joint_nfev)
        trial.planets = [*trial.planets[:i], trial.planets[-1], *trial.planets[i:-1]]
        out.append(trial)
        if only_better:
            break
    out.sort(key=lambda f: -f.log_likelihood)
    return out


def alias_check(data: RVData, fit: Fit, settings: SearchSettings) -> Fit:
    """Try each planet at its aliases and harmonics: the residuals without it are scanned
    at its period and at the alternatives; an alternative that fits better is refitted
    jointly and kept when it raises the likelihood."""
    best = fit
    for i in range(len(fit.planets)):
        for trial in alias_variants(data, best, settings, i, only_better=True):
            if trial.log_likelihood > best.log_likelihood + 1e-3 and plausible(data, trial):
                best = trial
    return best


def plausible(data: RVData, fit: Fit) -> bool:
    """Whether a fit is physically sensible: a finite likelihood, no two planets closer
    than a period ratio of 1.05, and every K between 1 cm/s and five times the data's
    RV span (least squares can merge two planets into a cancelling pair of huge amplitude, or
    shrink one to nothing)."""
    if not np.isfinite(fit.log_likelihood):
        return False
    # an eccentric orbit's extremes may fall between the epochs: allow K well above
    # the observed span, but not the runaway amplitudes of a cancelling pair
    span = 5.0 * (float(np.ptp(data.rv_ms)) + float(np.max(data.err_ms)))
    if any(not 0.01 < p.K_ms < span for p in fit.planets):
        return False
    periods = sorted(p.P_days for p in fit.planets)
    return all(b / a > 1.05 for a, b in zip(periods, periods[1:], strict=False))


def same_periods(a: Fit, b: Fit, tol: float = 0.01) -> bool:
    """Whether two fits have the same planets, judged by their periods."""
    pa = sorted(p.P_days for p in a.planets)
    pb = sorted(p.P_days for p in b.planets)
    return len(pa) == len(pb) and all(abs(math.log(x / y)) < tol for x, y in zip(pa, pb,
                                                                                  strict=True))


CIRCULAR_PENALTY = 300.0  # an e penalty that keeps every orbit nearly circular (e < ~0.01)


def alternative_fits(data: RVData, fit: Fit, settings: SearchSettings) -> list[Fit]:
    """Other models with the same planet count, most likely first: the runner-up
    candidates of the search, the same planets on circular orbits, and every planet
    moved to each of its aliases and harmonics (refitted jointly). Duplicates of `fit` or of each other are dropped."""
    pool = list(fit.tags.get("alternatives", []))
    # all orbits circular: the maximum-likelihood e is biased high at low signal-to-noise
    pool.append(fit_planets(data, [replace(p, e=min(p.e, 0.05)) for p in fit.planets],
                            settings.period_range, fit.jitter_ms, max_nfev=settings.joint_nfev,
                            e_penalty=CIRCULAR_PENALTY))
    for i in range(len(fit.planets)):
        pool += alias_variants(data, fit, settings, i, only_better=False)
    pool.sort(key=lambda f: -f.log_likelihood)
    out: list[Fit] = []
    for cand in pool:
        if not plausible(data, cand):
            continue
        circular = all(p.e < 0.02 for p in cand.planets)
        if circular and not all(p.e < 0.02 for p in fit.planets):
            out.append(cand)  # same periods, different shape: keep it
        elif not same_periods(cand, fit) and not any(same_periods(cand, o) for o in out):
            out.append(cand)
    return out


def prune(data: RVData, fits: list[Fit], settings: SearchSettings) -> None:
    """Backward pass over the greedy fits (in place): each model with k planets, minus
    its least useful planet and refitted, replaces the k-1 planet model when it fits
    better. A planet found early as a blend of two signals is thereby corrected once the
    larger model has separated them."""
    for k in range(len(fits) - 1, 1, -1):
        trials = []
        for i in range(k):
            rest = [p for j, p in enumerate(fits[k].planets) if j != i]
            trials.append(fit_planets(data, rest, settings.period_range, fits[k].jitter_ms,
                                      max_nfev=settings.joint_nfev))
        trials = [f for f in trials if plausible(data, f)]
        if not trials:
            continue
        best = max(trials, key=lambda f: f.log_likelihood)
        if best.log_likelihood > fits[k - 1].log_likelihood + 1e-3:
            best.tags["alternatives"] = [fits[k - 1], *fits[k - 1].tags.get("alternatives", [])]
            fits[k - 1] = best


def add_planet(data: RVData, fits: list[Fit], settings: SearchSettings,
               freq: NDArray[np.float64] | None = None) -> bool:
    """Append the best model with one planet more than the last of `fits` (in place),
    alias-checked, with its runner-ups as alternatives. False when no candidate is left."""
    freq = frequency_grid(data, settings.period_range) if freq is None else freq
    candidates = best_new_planet(data, fits[-1], settings, freq)
    if not candidates:
        return False
    new = alias_check(data, candidates[0], settings)
    new.tags["alternatives"] = candidates[1:]
    fits.append(new)
    return True


def greedy_search(data: RVData, settings: SearchSettings) -> list[Fit]:
    """Fits with 0, 1, 2, ... planets added greedily. Planets are added while the BIC
    drops by more than `settings.delta_bic`; `settings.extra_planets` more models are
    fitted after that as fallbacks; then a backward pass (`prune`). Returns the best fit
    found for each planet count; each fit's tags["alternatives"] holds runner-up fits
    with the same count."""
    freq = frequency_grid(data, settings.period_range)
    fits = [evaluate(data, [])]
    rejected = 0
    while len(fits) - 1 < settings.max_planets:
        if not add_planet(data, fits, settings, freq):
            break
        if fits[-2].bic(data.n) - fits[-1].bic(data.n) <= settings.delta_bic:
            rejected += 1
            if rejected > settings.extra_planets:
                break
    prune(data, fits, settings)
    return fits


def select_by_bic(fits: Sequence[Fit], n_points: int, delta_bic: float) -> int:
    """Planet count chosen greedily: add planets while each one lowers the BIC by more
    than `delta_bic`."""
    chosen = 0
    for k in range(1, len(fits)):
        if fits[k - 1].bic(n_points) - fits[k].bic(n_points) > delta_bic:
            chosen = k
        else:
            break
    return chosen
