"""Relative two-body orbits under an altered force law or drag, and their least-squares
orbit fits (orbit determination by differential correction).

The relative position r of two bodies obeys

    a = -mu r / |r|^(3 + alpha) - v / tau

(alpha = 0 and tau = inf: Newton). `relative_orbit` integrates it with DOP853;
`fit_kepler` fits a Keplerian ellipse, fixed or with secular element rates, to
observed positions by nonlinear least squares (the maximum-likelihood estimate for
Gaussian position noise), and `forecast_kepler` propagates it. Units are whatever
the caller uses consistently (the NatureGym gravity families use au and days)."""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

from .kepler import eccentric_anomaly

#: The frozen version of the orbit-fit method; a change of the fit changes it.
ORBIT_FIT_VERSION = "orbit-fit/1"
_RTOL = 1e-9


def relative_orbit(times: np.ndarray, state0: np.ndarray, mu: float, alpha: float = 0.0,
                   drag_rate: float = 0.0, t0: float = 0.0) -> np.ndarray:
    """Positions (len(times), 2) of the relative orbit starting at `state0` = (x, y, vx,
    vy) at time t0, under a = -mu r/|r|^(3+alpha) - drag_rate v; times sorted, >= t0.
    A failed integration gives a far-off orbit (1e3 everywhere), which a fit rejects."""
    times = np.asarray(times, dtype=float)

    def rhs(_t, y):
        r = np.hypot(y[0], y[1])
        a = -mu / r ** (3.0 + alpha)
        return [y[2], y[3], a * y[0] - drag_rate * y[2], a * y[1] - drag_rate * y[3]]

    state0 = np.asarray(state0, dtype=float)
    r_start = float(np.hypot(state0[0], state0[1]))

    # A trial orbit that plunges or escapes would take forever (or nothing) to
    # integrate: stop it, and report it as far off.
    def plunge(_t, y):
        return np.hypot(y[0], y[1]) - 0.02 * r_start

    def escape(_t, y):
        return np.hypot(y[0], y[1]) - 50.0 * r_start

    plunge.terminal = escape.terminal = True  # type: ignore[attr-defined]
    sol = solve_ivp(rhs, (t0, float(times[-1])), state0, t_eval=times, method="DOP853",
                    rtol=_RTOL, atol=1e-12 * r_start, events=(plunge, escape))
    if not sol.success or sol.y.shape[1] != len(times):
        return np.full((len(times), 2), 1e3)
    return sol.y[:2].T


def kepler_positions(times: np.ndarray, elements: np.ndarray) -> np.ndarray:
    """Positions (N, 2) on a Keplerian ellipse whose elements drift secularly.

    elements = (a, a_rate, e, omega, omega_rate, m0, n, n_rate): semi-major axis a(t) =
    a (1 + a_rate t), periapsis angle omega + omega_rate t, mean anomaly m0 + n t +
    n_rate t^2 / 2 (t from the first observation). With the rates at 0 it is a fixed
    Keplerian orbit."""
    a, a_rate, e, omega, omega_rate, m0, n, n_rate = elements
    t = np.asarray(times, dtype=float)
    e = float(np.clip(e, 0.0, 0.95))
    mean = m0 + n * t + 0.5 * n_rate * t * t
    big_e = eccentric_anomaly(mean, e)
    size = a * (1.0 + a_rate * t)
    x = size * (np.cos(big_e) - e)
    y = size * np.sqrt(1.0 - e * e) * np.sin(big_e)
    angle = omega + omega_rate * t
    return np.column_stack([x * np.cos(angle) - y * np.sin(angle),
                            x * np.sin(angle) + y * np.cos(angle)])


def _starting_elements(times: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Fixed-ellipse elements read off the data: mean motion from the unwrapped position
    angle, size and eccentricity from the extreme separations, periapsis from the
    closest sample."""
    r = np.hypot(positions[:, 0], positions[:, 1])
    theta = np.unwrap(np.arctan2(positions[:, 1], positions[:, 0]))
    span = times[-1] - times[0]
    n = abs(theta[-1] - theta[0]) / span
    sense = 1.0 if theta[-1] >= theta[0] else -1.0
    r_min, r_max = float(r.min()), float(r.max())
    a = 0.5 * (r_min + r_max)
    e = (r_max - r_min) / (r_max + r_min)
    k = int(np.argmin(r))
    omega = float(theta[k])
    m0 = -n * (times[k] - times[0])
    return np.array([a, 0.0, e, omega, 0.0, m0, n, 0.0]), sense


def fit_kepler(times: np.ndarray, positions: np.ndarray, *, secular: bool) -> np.ndarray:
    """Least-squares elements (see `kepler_positions`) for positions (N, 2) at sorted
    times: a fixed Keplerian ellipse (`secular=False`: the rates held at 0), or one whose
    size, periapsis and mean motion drift at constant rates (`secular=True`, started from
    the fixed fit). Times are taken relative to the first one. An orbit running
    clockwise is fitted mirrored and mirrored back."""
    times = np.asarray(times, dtype=float)
    t = times - times[0]
    start, sense = _starting_elements(t, positions)
    pos = positions * np.array([1.0, sense])
    if sense < 0:
        start[3] = -start[3]
    scale = float(np.hypot(*pos.T).mean())
    fixed_idx = [0, 2, 3, 5, 6]

    def residual(p, idx):
        elements = start.copy()
        elements[idx] = p
        return ((kepler_positions(t, elements) - pos) / scale).ravel()

    fit = least_squares(residual, start[fixed_idx], args=(fixed_idx,), method="lm",
                        x_scale="jac", max_nfev=2000)
    start[fixed_idx] = fit.x
    if secular:
        idx = list(range(8))
        fit = least_squares(residual, start, args=(idx,), method="lm", x_scale="jac",
                            max_nfev=4000)
        start = fit.x
    return np.concatenate([start, [sense, times[0]]])


def forecast_kepler(fitted: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Positions (N, 2) at `times` from the output of `fit_kepler`."""
    elements, sense, t0 = fitted[:8], fitted[8], fitted[9]
    return kepler_positions(np.asarray(times, float) - t0, elements) * np.array([1.0, sense])
