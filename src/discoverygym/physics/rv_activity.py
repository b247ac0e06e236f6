"""Radial velocities of a star with one planet and stellar activity, and two fitters.

- `keplerian_rv`: one Keplerian orbit (m/s).
- `activity_terms` / `sample_activity`: quasi-periodic rotation activity (celerite2's
  RotationTerm) plus granulation (an SHOTerm), drawn exactly from the dense covariance
  with the caller's generator (celerite2's own sampler uses the global RNG).
- `fit_keplerian`: a periodogram peak and a least-squares Keplerian with an offset
  (white noise only).
- `fit_keplerian_gp`: a Keplerian plus a quasi-periodic Gaussian process fitted together
  by maximum likelihood, predicting with the GP's conditional mean: the approach of
  Haywood et al. 2014 (MNRAS 443, 2517) with celerite's fast GP (Foreman-Mackey et al.
  2017, AJ 154, 220), reimplemented and frozen here (`RV_GP_FIT_VERSION`).

Each fit's predictor also has `.planet`: the fitted Keplerian alone (no offset, no
activity), the planet's reflex velocity."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import least_squares, minimize

from .kepler import eccentric_anomaly

RV_GP_FIT_VERSION = "keplerian-gp-fit/1"
PERIOD_RANGE_DAYS = (1.5, 100.0)


def keplerian_rv(t_days: np.ndarray, period_days: float, k_ms: float, e: float,
                 omega_rad: float, phase_rad: float) -> np.ndarray:
    """RV (m/s) of one planet; `phase_rad` is the mean anomaly at t = 0."""
    mean = phase_rad + 2.0 * np.pi * np.asarray(t_days, float) / period_days
    big_e = eccentric_anomaly(mean, e)
    nu = 2.0 * np.arctan2(np.sqrt(1.0 + e) * np.sin(big_e / 2.0),
                          np.sqrt(1.0 - e) * np.cos(big_e / 2.0))
    return k_ms * (np.cos(nu + omega_rad) + e * np.cos(omega_rad))


def activity_terms(rotation_sigma_ms: float, rotation_period_days: float, q0: float,
                   dq: float, f: float, granulation_sigma_ms: float,
                   granulation_rho_days: float):
    import celerite2.terms as terms

    return (terms.RotationTerm(sigma=rotation_sigma_ms, period=rotation_period_days, Q0=q0,
                               dQ=dq, f=f)
            + terms.SHOTerm(sigma=granulation_sigma_ms, rho=granulation_rho_days,
                            Q=1.0 / np.sqrt(2.0)))


def sample_activity(kernel, t_days: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of the activity at t (m/s) from the kernel's dense covariance."""
    tau = np.abs(t_days[:, None] - t_days[None, :])
    cov = kernel.get_value(tau) + 1e-9 * np.eye(len(t_days))
    return np.linalg.cholesky(cov) @ rng.normal(size=len(t_days))


def _periodogram_peaks(t: np.ndarray, rv: np.ndarray, n_peaks: int) -> list[float]:
    from astropy.timeseries import LombScargle

    freq = np.linspace(1.0 / PERIOD_RANGE_DAYS[1], 1.0 / PERIOD_RANGE_DAYS[0], 6000)
    power = LombScargle(t, rv).power(freq)
    order = np.argsort(power)[::-1]
    peaks: list[float] = []
    for k in order:
        if all(abs(freq[k] - f) > 2.0 / (t[-1] - t[0]) for f in peaks):
            peaks.append(float(freq[k]))
        if len(peaks) == n_peaks:
            break
    return [1.0 / f for f in peaks]


def _kepler_model(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    log_period, k_ms, sec, ses, phase, offset = p[:6]
    e = min(sec * sec + ses * ses, 0.9)
    return keplerian_rv(t, np.exp(log_period), k_ms, e, np.arctan2(ses, sec), phase) + offset


def _kepler_start(t: np.ndarray, rv: np.ndarray, period: float) -> np.ndarray:
    """A circular orbit at `period` by linear least squares (amplitude and phase)."""
    w = 2.0 * np.pi * t / period
    design = np.column_stack([np.cos(w), np.sin(w), np.ones_like(t)])
    (c, s, offset), *_ = np.linalg.lstsq(design, rv, rcond=None)
    k_ms = float(np.hypot(c, s))
    # K cos(w + phase) = c cos w + s sin w  ->  phase = atan2(-s, c)
    return np.array([np.log(period), k_ms, 0.1, 0.0, float(np.arctan2(-s, c)), offset])


Predictor = Callable[[np.ndarray], np.ndarray]


def fit_keplerian(t: np.ndarray, rv: np.ndarray, err: np.ndarray) -> Predictor:
    """The strongest periodogram peak, refined by a weighted least-squares Keplerian with
    an offset; returns the forecast function (m/s at given times)."""
    period = _periodogram_peaks(t, rv, 1)[0]
    start = _kepler_start(t, rv, period)
    fit = least_squares(lambda p: (_kepler_model(p, t) - rv) / err, start, method="lm",
                        max_nfev=2000)

    def predict(times, p=fit.x):
        return _kepler_model(p, np.asarray(times, float))

    predict.planet = _planet_only(fit.x)  # type: ignore[attr-defined]
    return predict


def _planet_only(p: np.ndarray) -> Predictor:
    """The fitted Keplerian alone: no offset, no activity (the planet's reflex velocity,
    zero on average over an orbit)."""
    q = np.array(p, dtype=float)
    q[5] = 0.0
    return lambda times: _kepler_model(q, np.asarray(times, float))


def fit_keplerian_gp(t: np.ndarray, rv: np.ndarray, err: np.ndarray,
                     n_starts: int = 2) -> Predictor:
    """A Keplerian plus a quasi-periodic GP (RotationTerm) and a jitter, fitted together
    by maximum likelihood from the `n_starts` strongest periodogram peaks (the best
    likelihood kept); forecasts are the Keplerian plus the GP's conditional mean."""
    import celerite2
    import celerite2.terms as terms

    span = float(t[-1] - t[0])

    def kernel(q):
        sigma, period, q0, dq, f = np.exp(q[:5])
        return terms.RotationTerm(sigma=sigma, period=period, Q0=q0, dQ=dq,
                                  f=min(f, 1.0))

    def gp_for(p):
        gp = celerite2.GaussianProcess(kernel(p[6:11]), mean=0.0)
        gp.compute(t, diag=err**2 + np.exp(2.0 * p[11]), quiet=True)
        return gp

    def negative_log_likelihood(p):
        if not np.all(np.isfinite(p)):
            return 1e25
        try:
            value = -gp_for(p).log_likelihood(rv - _kepler_model(p, t))
        except (celerite2.driver.LinAlgError, ValueError, FloatingPointError):
            return 1e25
        return float(value) if np.isfinite(value) else 1e25

    sd = float(np.std(rv))
    bounds = ([(np.log(PERIOD_RANGE_DAYS[0]), np.log(PERIOD_RANGE_DAYS[1])), (0.0, 10 * sd),
               (-0.95, 0.95), (-0.95, 0.95), (None, None), (None, None)]
              + [(np.log(0.1), np.log(10 * sd)), (np.log(2.0), np.log(span)),
                 (np.log(0.1), np.log(20.0)), (np.log(0.01), np.log(20.0)),
                 (np.log(0.01), 0.0), (np.log(0.01), np.log(10 * sd))])
    best = None
    for period in _periodogram_peaks(t, rv, n_starts):
        start = _kepler_start(t, rv, period)
        rot = 20.0 if abs(period - 20.0) > 3 else 30.0
        p0 = np.concatenate([start, np.log([sd, rot, 1.0, 2.0, 0.5]), [np.log(0.5)]])
        p0 = np.clip(p0, [b[0] if b[0] is not None else -np.inf for b in bounds],
                     [b[1] if b[1] is not None else np.inf for b in bounds])
        result = minimize(negative_log_likelihood, p0, method="L-BFGS-B", bounds=bounds,
                          options={"maxiter": 150})
        if best is None or result.fun < best.fun:
            best = result
    p = best.x
    residual = rv - _kepler_model(p, t)
    gp = gp_for(p)

    def predict(times, p=p, gp=gp, residual=residual):
        times = np.asarray(times, float)
        return _kepler_model(p, times) + gp.predict(residual, t=times, return_cov=False)

    predict.planet = _planet_only(p)  # type: ignore[attr-defined]
    return predict
