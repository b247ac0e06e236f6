"""Kepler's equation for bound and unbound two-body orbits, vectorised with numpy.

Used by gravity's Keplerian baseline (positions along a fitted orbit) and by stargazer's
radial-velocity model (the generator, the evaluator and the fitters alike)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

TWO_PI = 2.0 * np.pi


def eccentric_anomaly(mean_anomaly: ArrayLike, eccentricity: ArrayLike, tol: float = 1e-12,
                      max_iter: int = 50) -> NDArray[np.float64]:
    """Eccentric anomaly E (radians) solving E - e sin E = M for M reduced to [0, 2 pi),
    vectorised over M and e (broadcast); e in [0, 1).

    Newton iteration from Danby's starting guess E0 = M + 0.85 e sign(sin M), which
    converges for every e in [0, 1); it stops when every |dE| < tol. Newton converges
    quadratically there, so the step after one below 1e-12 is below rounding: the result
    is as accurate as the reduced M allows."""
    m = np.mod(np.asarray(mean_anomaly, dtype=float), TWO_PI)
    ecc = np.asarray(eccentricity, dtype=float)
    if np.any((ecc < 0) | (ecc >= 1)):
        raise ValueError("eccentricity must lie in [0, 1)")
    big_e = m + 0.85 * ecc * np.sign(np.sin(m))
    for _ in range(max_iter):
        f = big_e - ecc * np.sin(big_e) - m
        step = f / (1.0 - ecc * np.cos(big_e))
        big_e = big_e - step
        if np.all(np.abs(step) < tol):
            break
    return big_e


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
