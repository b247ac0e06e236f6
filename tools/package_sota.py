"""The frozen state-of-the-art methods of the shipped task packages.

Each method here was run once by `tools/build_packages.py`; the figure it reached on each
dataset is written into the package's `metadata.json` as the SOTA, with its provenance
(method, who ran it, date, command). They are deliberately stronger than the scripted
`baseline` agent (suites/packages/baselines/solvers.py), which runs the simpler method
whose figure is recorded as each instance's `baseline_score`.

Gravity packages: a full orbit fit. The relative orbit of the two stars is integrated
with the force law in question and its free parameters (law, strength, initial state)
are fitted to every observed position by nonlinear least squares, started from the
simple method's estimate. This is the maximum-likelihood estimate for Gaussian position
noise, the standard way orbits are measured (cf. orbit determination by differential
correction), and uses every sample rather than noisy second derivatives."""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares
from scipy.signal import savgol_filter


def _relative(pos: np.ndarray) -> np.ndarray:
    return pos[:, 2:4] - pos[:, 0:2]


def _scaled(t: np.ndarray, rel: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Dimensionless time (0..1) and positions (first separation = 1), and the scales."""
    length, duration = float(np.hypot(*rel[0])), float(t[-1] - t[0])
    return (t - t[0]) / duration, rel / length, length, duration


def _initial_state(ts: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Position and velocity at the first sample from a local polynomial (scaled units)."""
    n = 15
    coef = [np.polyfit(ts[:n], xs[:n, k], 4) for k in range(2)]
    return np.array([np.polyval(coef[0], 0.0), np.polyval(coef[1], 0.0),
                     np.polyval(np.polyder(coef[0]), 0.0), np.polyval(np.polyder(coef[1]), 0.0)])


def _orbit(ts: np.ndarray, state0: np.ndarray, strength: float, alpha: float,
           drag_rate: float) -> np.ndarray:
    """Scaled relative orbit under a = -strength r / |r|^(3+alpha) - drag_rate v."""

    def rhs(_t, y):
        r = np.hypot(y[0], y[1])
        a = -strength / r ** (3.0 + alpha)
        return [y[2], y[3], a * y[0] - drag_rate * y[2], a * y[1] - drag_rate * y[3]]

    sol = solve_ivp(rhs, (0.0, ts[-1]), state0, t_eval=ts, method="DOP853",
                    rtol=1e-11, atol=1e-12)
    if not sol.success or sol.y.shape[1] != len(ts):
        return np.full((len(ts), 2), 1e3)
    return sol.y[:2].T


def _strength_guess(ts: np.ndarray, xs: np.ndarray, alpha: float) -> float:
    acc = savgol_filter(xs, 15, 4, deriv=2, delta=ts[1] - ts[0], axis=0)[10:-10]
    r = np.hypot(*xs[10:-10].T)
    return float(np.median(np.hypot(*acc.T) * r ** (2.0 + alpha)))


def fit_force_law_orbit(t: np.ndarray, pos: np.ndarray, alpha0: float) -> float:
    """alpha of F ∝ r^-(2+alpha) by a least-squares fit of the integrated relative orbit
    (parameters: strength, alpha, initial position and velocity), started at alpha0."""
    ts, xs, _, _ = _scaled(t, _relative(pos))
    x0 = np.concatenate([[np.log(_strength_guess(ts, xs, alpha0)), alpha0],
                         _initial_state(ts, xs)])

    def residual(p):
        return (_orbit(ts, p[2:], np.exp(p[0]), p[1], 0.0) - xs).ravel()

    return float(least_squares(residual, x0, x_scale="jac", xtol=1e-12, ftol=1e-12).x[1])


def fit_drag_orbit(t: np.ndarray, pos: np.ndarray, tau0_s: float) -> float:
    """tau of a Newtonian binary with drag a_i = -v_i / tau by a least-squares fit of the
    integrated relative orbit (parameters: strength, 1/tau, initial position and
    velocity), started at tau0_s."""
    ts, xs, _, duration = _scaled(t, _relative(pos))
    x0 = np.concatenate([[np.log(_strength_guess(ts, xs, 0.0)), duration / tau0_s],
                         _initial_state(ts, xs)])

    def residual(p):
        return (_orbit(ts, p[2:], np.exp(p[0]), 0.0, p[1]) - xs).ravel()

    rate = least_squares(residual, x0, x_scale="jac", xtol=1e-12, ftol=1e-12).x[1]
    return float(duration / rate)
