"""Kepler's equation for bound and unbound two-body orbits, vectorised with numpy.

Used by gravity's Keplerian baseline (positions along a fitted orbit) and by stargazer's
radial-velocity model (the generator, the evaluator and the fitters alike)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

TWO_PI = 2.0 * np.pi


# Arrays at least this large drop their converged elements between Newton steps (the
# gather is cheaper than the sines and cosines it saves). Smaller ones step whole until
# every element has converged: there the cost is the number of numpy calls, not their
# length, and a step after convergence is below rounding.
_COMPACT_MIN_SIZE = 2048


def danby_start(mean_anomaly: NDArray[np.float64],
                eccentricity: NDArray[np.float64]) -> NDArray[np.float64]:
    """Danby's starting guess E0 = M + 0.85 e sign(sin M) (radians) for Kepler's equation,
    M already reduced to [0, 2 pi)."""
    return mean_anomaly + 0.85 * eccentricity * np.sign(np.sin(mean_anomaly))


def markley_start(mean_anomaly: NDArray[np.float64],
                  eccentricity: NDArray[np.float64]) -> NDArray[np.float64]:
    """Markley's (1995, Celest. Mech. 63, 101) non-iterative solution of Kepler's equation
    (radians) for M reduced to [0, 2 pi): a cubic in E from a Pade approximant of sin E,
    then one fifth-order (Halley-type) correction. Its error is a few 1e-16 for e in
    [0, 1), so one Newton step after it is already below rounding."""
    return markley_sin_cos(mean_anomaly, eccentricity)[0]


def markley_sin_cos(mean_anomaly: NDArray[np.float64], eccentricity: NDArray[np.float64]
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """`markley_start` E with sin E and cos E. The method evaluates sin and cos at its
    cubic root E0; E = E0 + d with |d| below about 1e-3, so sin E and cos E follow from
    them by the rotation through d, its sine and cosine by Taylor series to d^5 (the
    next term is below 1e-19): no further sine or cosine is computed."""
    flip = mean_anomaly > np.pi  # solve for M in [0, pi]: E(2 pi - M) = 2 pi - E(M)
    m = np.where(flip, TWO_PI - mean_anomaly, mean_anomaly)
    e = eccentricity
    pi2 = np.pi * np.pi
    alpha = (3.0 * pi2 + 1.6 * np.pi * (np.pi - m) / (1.0 + e)) / (pi2 - 6.0)
    d = 3.0 * (1.0 - e) + alpha * e
    q = 2.0 * alpha * d * (1.0 - e) - m * m
    r = 3.0 * alpha * d * (d - 1.0 + e) * m + m * m * m
    w = np.cbrt(np.abs(r) + np.sqrt(q * q * q + r * r)) ** 2
    big_e = (2.0 * r * w / (w * w + w * q + q * q) + m) / d
    sin0, cos0 = np.sin(big_e), np.cos(big_e)
    e_sin, e_cos = e * sin0, e * cos0
    f0 = big_e - e_sin - m
    f1 = 1.0 - e_cos
    d3 = -f0 / (f1 - 0.5 * f0 * e_sin / f1)
    d4 = -f0 / (f1 + 0.5 * d3 * e_sin + d3 * d3 * e_cos / 6.0)
    d5 = -f0 / (f1 + 0.5 * d4 * e_sin + d4 * d4 * e_cos / 6.0 - d4 * d4 * d4 * e_sin / 24.0)
    big_e = big_e + d5
    d2 = d5 * d5
    sin_d = d5 * (1.0 - d2 / 6.0 * (1.0 - d2 / 20.0))
    cos_d = 1.0 - d2 / 2.0 * (1.0 - d2 / 12.0)
    sin_e = sin0 * cos_d + cos0 * sin_d
    cos_e = cos0 * cos_d - sin0 * sin_d
    return (np.where(flip, TWO_PI - big_e, big_e), np.where(flip, -sin_e, sin_e), cos_e)


STARTERS = {"danby": danby_start, "markley": markley_start}


def eccentric_anomaly(mean_anomaly: ArrayLike, eccentricity: ArrayLike, tol: float = 1e-12,
                      max_iter: int = 50, starter: str = "danby") -> NDArray[np.float64]:
    """Eccentric anomaly E (radians) solving E - e sin E = M for M reduced to [0, 2 pi),
    vectorised over M and e (broadcast); e in [0, 1).

    Newton iteration from a starting guess: Danby's E0 = M + 0.85 e sign(sin M) (the
    default; converges for every e in [0, 1) in about six steps) or Markley's
    (`starter="markley"`: accurate to rounding already, so the first step confirms it).
    Each element stops once its own step |dE| < tol (arrays under _COMPACT_MIN_SIZE
    elements step together until all have): Newton converges quadratically there, so the
    step after one below 1e-12 is below rounding and the result is as accurate as the
    reduced M allows."""
    return eccentric_anomaly_sin_cos(mean_anomaly, eccentricity, tol, max_iter, starter)[0]


# Newton steps allowed from a caller's `start` before it is abandoned for the starter's
WARM_MAX_ITER = 8


def eccentric_anomaly_sin_cos(mean_anomaly: ArrayLike, eccentricity: ArrayLike,
                              tol: float = 1e-12, max_iter: int = 50, starter: str = "danby",
                              start: NDArray[np.float64] | None = None
                              ) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                         NDArray[np.float64]]:
    """`eccentric_anomaly` E with sin E and cos E, which the last Newton step has already
    evaluated at E + dE: they are carried to E to first order in dE, exact to rounding
    since |dE| < tol (1e-12) leaves a second-order term below 1e-24.

    `start` (radians, of the broadcast shape): E for nearby M and e, e.g. a fitter's
    previous evaluation; Newton runs from it instead of the starter, and when it has not
    converged within WARM_MAX_ITER steps the whole array is solved again from the
    starter, so a poor start costs time, never accuracy."""
    m = np.mod(np.asarray(mean_anomaly, dtype=float), TWO_PI)
    ecc = np.asarray(eccentricity, dtype=float)
    if ((ecc < 0) | (ecc >= 1)).any():
        raise ValueError("eccentricity must lie in [0, 1)")
    if ecc.ndim == 0 and ecc == 0.0:  # a circular orbit: E = M (Newton's first step is 0)
        return m, np.sin(m), np.cos(m)
    if start is not None:
        big_e = np.asarray(start, dtype=float)
        if big_e.shape == np.broadcast_shapes(m.shape, ecc.shape):
            solution = _newton(*_broadcast(m, ecc, big_e), tol, WARM_MAX_ITER)
            if solution[3]:
                return solution[:3]
    if starter == "markley":  # the starter's own sine and cosine: Newton's first step is free
        big_e, sin_e, cos_e = markley_sin_cos(m, ecc)
        return _newton(*_broadcast(m, ecc, big_e), tol, max_iter, (sin_e, cos_e))[:3]
    big_e = STARTERS[starter](m, ecc)
    return _newton(*_broadcast(m, ecc, big_e), tol, max_iter)[:3]


def _broadcast(m: NDArray[np.float64], ecc: NDArray[np.float64], big_e: NDArray[np.float64]
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """M and e broadcast to the shape of E (a single e stays a scalar)."""
    if m.shape != big_e.shape:
        m = np.broadcast_to(m, big_e.shape)
    if ecc.ndim and ecc.shape != big_e.shape:
        ecc = np.broadcast_to(ecc, big_e.shape)
    return m, ecc, big_e


def _newton(m: NDArray[np.float64], ecc: NDArray[np.float64], big_e: NDArray[np.float64],
            tol: float, max_iter: int,
            sin_cos: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
            ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], bool]:
    """Newton steps E <- E - (E - e sin E - M) / (1 - e cos E) from `big_e` (M of its
    shape, e too or a scalar) until the step is below `tol`: small arrays all together,
    large ones each element on its own. `sin_cos`: sin and cos of `big_e` where the
    caller has them (the first step then computes neither). Returns E, sin E, cos E and
    whether every element converged within `max_iter` steps."""
    given = sin_cos
    if big_e.size < _COMPACT_MIN_SIZE:
        for _ in range(max_iter):
            sin_e, cos_e = given if given is not None else (np.sin(big_e), np.cos(big_e))
            given = None
            step = (big_e - ecc * sin_e - m) / (1.0 - ecc * cos_e)
            big_e = big_e - step
            converged = np.abs(step).max() < tol
            if converged:
                break
        return big_e, sin_e - step * cos_e, cos_e + step * sin_e, bool(converged)
    shape = big_e.shape
    out, out_sin, out_cos = big_e.ravel().copy(), np.empty(big_e.size), np.empty(big_e.size)
    live = np.arange(out.size)
    scalar_e = ecc.ndim == 0
    e_live, m_live, e_flat = out, m.ravel(), ecc if scalar_e else ecc.ravel()
    for _ in range(max_iter):
        if given is not None:
            sin_e, cos_e = (np.asarray(x, dtype=float).ravel() for x in given)
            given = None
        else:
            sin_e, cos_e = np.sin(e_live), np.cos(e_live)
        step = (e_live - e_flat * sin_e - m_live) / (1.0 - e_flat * cos_e)
        e_live = e_live - step
        out[live] = e_live
        out_sin[live] = sin_e - step * cos_e
        out_cos[live] = cos_e + step * sin_e
        keep = np.flatnonzero(~(np.abs(step) < tol))  # NaN is not converged
        if keep.size == 0:
            break
        live = live[keep]
        e_live, m_live = e_live[keep], m_live[keep]
        if not scalar_e:
            e_flat = e_flat[keep]
    return (out.reshape(shape), out_sin.reshape(shape), out_cos.reshape(shape),
            keep.size == 0)


def hyperbolic_anomaly(mean_anomaly: ArrayLike, eccentricity: ArrayLike, tol: float = 1e-14,
                       max_iter: int = 100) -> NDArray[np.float64]:
    """Hyperbolic anomaly H solving e sinh H - H = M (M in radians, any sign), vectorised
    over M and e (broadcast); e > 1. Newton iteration from H0 = asinh(M / e), which
    converges for every M (the function is odd in H and convex for H > 0)."""
    m = np.asarray(mean_anomaly, dtype=float)
    ecc = np.asarray(eccentricity, dtype=float)
    if np.any(ecc <= 1):
        raise ValueError("eccentricity must exceed 1 for a hyperbolic orbit")
    x = np.arcsinh(m / ecc)
    for _ in range(max_iter):
        step = (ecc * np.sinh(x) - x - m) / (ecc * np.cosh(x) - 1)
        x = x - step
        if np.all(np.abs(step) < tol):
            break
    return x


def true_anomaly(mean_anomaly: ArrayLike, eccentricity: ArrayLike) -> NDArray[np.float64]:
    """True anomaly (radians, in (-pi, pi]) for a mean anomaly and eccentricity in [0, 1)."""
    big_e = eccentric_anomaly(mean_anomaly, eccentricity)
    ecc = np.asarray(eccentricity, dtype=float)
    return 2.0 * np.arctan2(np.sqrt(1 + ecc) * np.sin(big_e / 2),
                            np.sqrt(1 - ecc) * np.cos(big_e / 2))
