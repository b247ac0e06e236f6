"""`ModelSolution`: a two-body Keplerian model (orbit in its plane, period, time of
periastron, mass fraction, barycentre drift) fitted to every observation by least
squares, each quantity derived from the model analytically. Velocity and acceleration
estimates from tight observation clusters supply what a Keplerian model cannot (drag
timescale, force-law exponent)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.optimize import least_squares

from ....physics.kepler import eccentric_anomaly, hyperbolic_anomaly
from .measurements import (
    CONSERVATION_TOLERANCE,
    INVERSE_SQUARE_TOLERANCE,
    KEPLER_RESIDUAL_TOLERANCE,
    Track,
    fit_drift,
    fit_exponential_decay,
    fit_power_law_exponent,
    scaled_lstsq,
)


@dataclass(frozen=True)
class KeplerOrbit:
    """A Keplerian relative orbit (star2 - star1) in a plane spanned by unit vectors
    `axis_u`, `axis_w`. `mean_motion` (rad/s) is signed: negative for clockwise
    motion in (u, w). Mean anomaly = mean_motion * (t - periastron_time_s)."""

    semi_latus_rectum_m: float
    eccentricity: float
    periastron_angle: float  # argument of periastron in the (u, w) plane, rad
    mean_motion: float
    periastron_time_s: float
    axis_u: np.ndarray
    axis_w: np.ndarray

    @property
    def bound(self) -> bool:
        return self.eccentricity < 1

    @property
    def semi_major_axis_m(self) -> float:
        """|a| (m); for a hyperbola the distance scale p / (e^2 - 1)."""
        return self.semi_latus_rectum_m / abs(1 - self.eccentricity**2)

    @property
    def period_s(self) -> float:
        return 2 * np.pi / abs(self.mean_motion)

    @property
    def gm(self) -> float:
        """G (m1 + m2) from the mean motion and the size of the orbit, m^3/s^2."""
        return self.mean_motion**2 * self.semi_major_axis_m**3

    def anomaly(self, time_s: np.ndarray) -> np.ndarray:
        """Eccentric (bound) or hyperbolic anomaly at the given times."""
        mean = np.abs(self.mean_motion) * (np.asarray(time_s) - self.periastron_time_s)
        if self.bound:
            return eccentric_anomaly(mean, self.eccentricity)
        return hyperbolic_anomaly(mean, self.eccentricity)

    def in_plane(self, anomaly: np.ndarray) -> tuple[np.ndarray, ...]:
        """Plane coordinates (x, y) and velocities (vx, vy) at eccentric (or
        hyperbolic) anomalies, in the frame rotated to the periastron."""
        e, a, n = self.eccentricity, self.semi_major_axis_m, abs(self.mean_motion)
        if self.bound:
            root = np.sqrt(1 - e**2)
            x, y = a * (np.cos(anomaly) - e), a * root * np.sin(anomaly)
            rate = n / (1 - e * np.cos(anomaly))
            vx, vy = -a * np.sin(anomaly) * rate, a * root * np.cos(anomaly) * rate
        else:
            root = np.sqrt(e**2 - 1)
            x, y = a * (e - np.cosh(anomaly)), a * root * np.sinh(anomaly)
            rate = n / (e * np.cosh(anomaly) - 1)
            vx, vy = -a * np.sinh(anomaly) * rate, a * root * np.cosh(anomaly) * rate
        return x, y, vx, vy

    def _to_space(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        c, s = np.cos(self.periastron_angle), np.sin(self.periastron_angle)
        sense = np.sign(self.mean_motion)
        u = c * x - s * sense * y
        w = s * x + c * sense * y
        return u[:, None] * self.axis_u[None, :] + w[:, None] * self.axis_w[None, :]

    def states_at_anomaly(self, anomaly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Relative positions and velocities (N, 3) at the given anomalies."""
        x, y, vx, vy = self.in_plane(np.atleast_1d(anomaly))
        return self._to_space(x, y), self._to_space(vx, vy)

    def position(self, time_s: np.ndarray) -> np.ndarray:
        return self.states_at_anomaly(self.anomaly(np.atleast_1d(time_s)))[0]

    def periastron_times(self, start_s: float, end_s: float) -> np.ndarray:
        """Periastron passages inside [start_s, end_s]."""
        if not self.bound:
            return np.array([self.periastron_time_s])
        k0 = np.ceil((start_s - self.periastron_time_s) / self.period_s)
        k1 = np.floor((end_s - self.periastron_time_s) / self.period_s)
        return self.periastron_time_s + np.arange(k0, k1 + 1) * self.period_s

    def apoastron_times(self, start_s: float, end_s: float) -> np.ndarray:
        half = 0.5 * self.period_s
        return self.periastron_times(start_s - half, end_s - half) + half


def _orbital_plane(relative_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors (u, w) spanning the plane of the relative orbit (through the
    focus). A planar orbit in xy gives u = x-hat, w = y-hat."""
    _, _, vt = np.linalg.svd(relative_m, full_matrices=False)
    normal = np.cross(vt[0], vt[1])
    normal /= np.linalg.norm(normal)
    if normal[2] < 0 or (normal[2] == 0 and normal.sum() < 0):
        normal = -normal
    reference = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = reference - normal * (reference @ normal)
    u /= np.linalg.norm(u)
    return u, np.cross(normal, u)


def _mean_anomaly_from_true(true_anomaly: np.ndarray, e: float) -> np.ndarray:
    if e < 1:
        ecc = 2 * np.arctan(np.sqrt((1 - e) / (1 + e)) * np.tan(true_anomaly / 2))
        return ecc - e * np.sin(ecc)
    hyp = 2 * np.arctanh(np.clip(np.sqrt((e - 1) / (e + 1)) * np.tan(true_anomaly / 2),
                                 -1 + 1e-15, 1 - 1e-15))
    return e * np.sinh(hyp) - hyp


def _initial_orbit(time_s: np.ndarray, relative_m: np.ndarray) -> KeplerOrbit:
    """Closed-form start: the conic 1/r = (1 + e cos(theta - omega)) / p through the
    points (linear in 1/p, e cos(omega)/p, e sin(omega)/p), then the mean motion from a
    periodogram of the points' mean anomalies, refined by a straight-line fit."""
    u, w = _orbital_plane(relative_m)
    x, y = relative_m @ u, relative_m @ w
    theta = np.arctan2(y, x)
    r = np.hypot(x, y)
    design = np.column_stack([np.ones_like(theta), np.cos(theta), np.sin(theta)])
    c, *_ = np.linalg.lstsq(design, 1.0 / r, rcond=None)
    p = 1.0 / c[0]
    e = float(np.hypot(c[1], c[2]) * p)
    omega = float(np.arctan2(c[2], c[1]))
    span = float(time_s[-1] - time_s[0]) or 1.0
    best = None
    for sense in (1.0, -1.0):
        true = sense * (theta - omega)
        mean = _mean_anomaly_from_true(np.mod(true + np.pi, 2 * np.pi) - np.pi, e)
        if e >= 1:
            slope, icpt = np.polyfit(time_s, mean, 1)
            resid = np.std(mean - (slope * time_s + icpt))
            score = -resid if slope > 0 else -np.inf
            cand = (score, sense, slope, -icpt / slope if slope else 0.0)
        else:
            cand = _periodogram(time_s, mean, span, sense)
        if best is None or cand[0] > best[0]:
            best = cand
    _, sense, n, tp = best
    # omega comes from the conic and does not depend on the sense of motion.
    return KeplerOrbit(p, e, omega, sense * n, tp, u, w)


def _periodogram(time_s: np.ndarray, mean: np.ndarray, span: float,
                 sense: float) -> tuple[float, float, float, float]:
    """Best mean motion n > 0 for mean anomalies that grow as n t + phase."""
    pick = np.linspace(0, len(time_s) - 1, min(len(time_s), 300)).astype(int)
    t, m = time_s[pick], mean[pick]
    n_min, n_max = 2 * np.pi / (3 * span), 2 * np.pi * 80 / span
    step = 0.05 / span
    grid = np.arange(n_min, n_max, step)
    power = np.abs(_phasor_sums(np.exp(1j * m), t, n_min, step, len(grid))) / len(t)
    k = int(np.argmax(power))
    n = grid[k]
    for _ in range(3):
        phase = np.angle(np.sum(np.exp(1j * (mean - n * time_s))))
        turns = np.round((n * time_s + phase - mean) / (2 * np.pi))
        n, phase = np.polyfit(time_s, mean + 2 * np.pi * turns, 1)
    tp = -phase / n
    return float(power[k]), sense, float(n), float(tp)


def _phasor_sums(weights: np.ndarray, t: np.ndarray, n_min: float, step: float,
                 count: int) -> np.ndarray:
    """sum_j weights_j exp(-i n_k t_j) on the grid n_k = n_min + k step, k < count. The
    grid is split as k = a B + b: exp(-i n_k t) = exp(-i (n_min + b step) t)
    exp(-i a B step t), so about 2 sqrt(count) exponentials per sample and one complex
    matrix product replace count exponentials per sample (the same sums to rounding)."""
    block = max(1, math.isqrt(count - 1) + 1) if count > 0 else 1
    blocks = -(-count // block)
    inner = np.exp(-1j * (n_min + step * np.arange(block))[:, None] * t[None, :]) * weights
    outer = np.exp(-1j * (block * step * np.arange(blocks))[:, None] * t[None, :])
    return (outer @ inner.T).ravel()[:count]


def fit_kepler_orbit(time_s: np.ndarray, relative_m: np.ndarray) -> tuple[KeplerOrbit, float]:
    """Least-squares Keplerian fit to relative positions (N, 3). Returns the orbit and
    the rms position residual relative to the orbit's size."""
    start = _initial_orbit(time_s, relative_m)
    u, w = start.axis_u, start.axis_w
    scale = start.semi_latus_rectum_m
    t_ref = float(np.median(time_s))

    def build(params: np.ndarray) -> KeplerOrbit:
        p, e, omega, n, phase = params
        tp = t_ref - phase / abs(n)
        return KeplerOrbit(p * scale, e, omega, n, tp, u, w)

    def residual(params: np.ndarray) -> np.ndarray:
        return ((build(params).position(time_s) - relative_m) / scale).ravel()

    n0 = start.mean_motion
    phase0 = abs(n0) * (t_ref - start.periastron_time_s)
    x0 = np.array([1.0, start.eccentricity, start.periastron_angle, n0, phase0])
    lo = [0.1, 0.0, -np.inf, -np.inf, -np.inf]
    hi = [10.0, np.inf, np.inf, np.inf, np.inf]
    if start.bound:
        hi[1] = 0.999999
    else:
        lo[1] = 1.000001
    x0[1] = np.clip(x0[1], lo[1] + 1e-9, hi[1] - 1e-9)
    fit = least_squares(residual, x0, bounds=(lo, hi), x_scale="jac", xtol=1e-15,
                        ftol=1e-15, gtol=1e-15, max_nfev=200)
    orbit = build(fit.x)
    rms = float(np.sqrt(np.mean(np.sum((orbit.position(time_s) - relative_m) ** 2, axis=1))))
    return orbit, rms / orbit.semi_major_axis_m


def fit_mass_fraction(track: Track) -> tuple[float, np.ndarray]:
    """Fraction m2 / (m1 + m2) and barycentre drift velocity (m/s) from
    star1 = R0 + V t - f2 (star2 - star1), linear least squares over all rows."""
    t = track.time_s
    rel = track.relative_m
    rows = []
    for k in range(3):
        block = np.zeros((len(t), 7))
        block[:, k] = 1.0
        block[:, 3 + k] = t
        block[:, 6] = -rel[:, k]
        rows.append(block)
    design = np.vstack(rows)
    target = track.star1_m.T.ravel()
    coeffs = scaled_lstsq(design, target)
    return float(coeffs[6]), coeffs[3:6]


def cluster_derivatives(time_s: np.ndarray, values: np.ndarray,
                        centre_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Velocity and acceleration at `centre_s` from the polynomial through one tight
    cluster of samples (degree = samples - 1, at most 4)."""
    dt = time_s - centre_s
    scale = float(np.max(np.abs(dt))) or 1.0
    degree = min(len(time_s) - 1, 4)
    coeffs = np.polynomial.polynomial.polyfit(dt / scale, values, degree)
    vel = coeffs[1] / scale
    acc = 2 * coeffs[2] / scale**2 if degree >= 2 else np.zeros_like(vel)
    return vel, acc


class ModelSolution:
    """Quantities from a Keplerian two-body model fitted to all observations, plus
    cluster estimates (`clusters`: lists of row indices of tight groups of times)."""

    def __init__(self, track: Track, gravitational_constant: float,
                 clusters: list[np.ndarray] | None = None) -> None:
        self.track = track
        self.G = gravitational_constant
        self.clusters = [np.asarray(c) for c in (clusters or []) if len(c) >= 3]
        if self.clusters:
            # Each star's acceleration is set by the other's mass: the ratio of the two
            # accelerations gives the mass fraction even where the barycentre's drift
            # and the relative motion are hard to tell apart (a nearly straight
            # hyperbolic track).
            self.fraction2 = self._cluster_mass_fraction()
            self.drift_ms = fit_drift(track.time_s, track.star1_m
                                      + self.fraction2 * track.relative_m)[1]
        else:
            self.fraction2, self.drift_ms = fit_mass_fraction(track)
        try:
            self.orbit, self.residual = fit_kepler_orbit(track.time_s, track.relative_m)
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            # No conic fits (a strongly non-Keplerian track): only cluster estimates
            # (drag, force law) and the verdict "not Keplerian" remain meaningful.
            self.orbit, self.residual = None, float("inf")

    @property
    def keplerian(self) -> bool:
        """Does a fixed Keplerian orbit reproduce every observation?"""
        return self.residual < KEPLER_RESIDUAL_TOLERANCE

    @cached_property
    def masses(self) -> tuple[float, float]:
        total = self.orbit.gm / self.G
        return total * (1 - self.fraction2), total * self.fraction2

    def period(self) -> float:
        return self.orbit.period_s

    def eccentricity(self) -> float:
        return self.orbit.eccentricity

    def semi_major_axis(self) -> float:
        return self.orbit.semi_major_axis_m

    def periastron(self) -> float:
        return self.orbit.semi_major_axis_m * abs(1 - self.orbit.eccentricity)

    def apoastron(self) -> float:
        return self.orbit.semi_major_axis_m * (1 + self.orbit.eccentricity)

    def specific_angular_momentum(self) -> float:
        return float(np.sqrt(self.orbit.gm * self.orbit.semi_latus_rectum_m))

    @cached_property
    def _one_orbit(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Anomaly grid over one orbit, relative positions and velocities there."""
        anomaly = np.linspace(-np.pi, np.pi, 200001)
        pos, vel = self.orbit.states_at_anomaly(anomaly)
        return anomaly, pos, vel

    def speed_extremes(self, star: int) -> tuple[float, float]:
        _, _, vel = self._one_orbit
        m1, m2 = self.masses
        share = -m2 / (m1 + m2) if star == 1 else m1 / (m1 + m2)
        speed = np.linalg.norm(self.drift_ms[None, :] + share * vel, axis=1)
        return float(speed.min()), float(speed.max())

    def time_fraction_acceleration_below_mean(self) -> float:
        # Time mean of 1/r^2 over an orbit is 1/(a^2 sqrt(1-e^2)); |a1| < mean where r > r_c.
        e, a = self.orbit.eccentricity, self.orbit.semi_major_axis_m
        r_c = a * (1 - e**2) ** 0.25
        cos_c = np.clip((1 - r_c / a) / e, -1, 1)
        ecc_c = np.arccos(cos_c)
        return float(1 - (ecc_c - e * np.sin(ecc_c)) / np.pi)

    def average_distance_from_barycentre(self, star: int) -> float:
        m1, m2 = self.masses
        share = m2 / (m1 + m2) if star == 1 else m1 / (m1 + m2)
        e = self.orbit.eccentricity
        return share * self.orbit.semi_major_axis_m * (1 + 0.5 * e**2)

    def travel_time(self, fraction: float, star: int = 1) -> float:
        # From periastron (E = 0) round to the next periastron (E = 2 pi).
        anomaly = np.linspace(0, 2 * np.pi, 200001)
        pos, _ = self.orbit.states_at_anomaly(anomaly)
        length = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pos, axis=0), axis=1))])
        e = self.orbit.eccentricity
        time = (anomaly - e * np.sin(anomaly)) / abs(self.orbit.mean_motion)
        # The star's barycentric path is the relative path scaled: same fractions.
        return float(np.interp(fraction * length[-1], length, time))

    def total_energy(self) -> float:
        m1, m2 = self.masses
        orbital = -np.sign(1 - self.orbit.eccentricity) * self.G * m1 * m2 / (
            2 * self.orbit.semi_major_axis_m)
        return float(orbital + 0.5 * (m1 + m2) * np.sum(self.drift_ms**2))

    def is_bound(self) -> bool:
        return self.orbit.bound

    @cached_property
    def _cluster_states(self) -> tuple[np.ndarray, ...]:
        """(times, relative positions, velocities, accelerations) at the middle sample
        of each observation cluster."""
        times, poss, vels, accs = [], [], [], []
        rel = self.track.relative_m
        for rows in self.clusters:
            t = self.track.time_s[rows]
            middle = int(np.argsort(t)[len(t) // 2])
            vel, acc = cluster_derivatives(t, rel[rows], float(t[middle]))
            times.append(t[middle])
            poss.append(rel[rows][middle])
            vels.append(vel)
            accs.append(acc)
        return np.array(times), np.array(poss), np.array(vels), np.array(accs)

    def _cluster_mass_fraction(self) -> float:
        shares = []
        for rows in self.clusters:
            t = self.track.time_s[rows]
            middle = float(t[np.argsort(t)[len(t) // 2]])
            _, acc1 = cluster_derivatives(t, self.track.star1_m[rows], middle)
            _, acc2 = cluster_derivatives(t, self.track.star2_m[rows], middle)
            a1, a2 = np.linalg.norm(acc1), np.linalg.norm(acc2)
            shares.append(a1 / (a1 + a2))
        return float(np.median(shares))

    def _cluster_power_law_exponent(self) -> float:
        _, poss, _, accs = self._cluster_states
        return fit_power_law_exponent(np.linalg.norm(poss, axis=1),
                                      np.linalg.norm(accs, axis=1))

    def _cluster_angular_momentum(self) -> tuple[np.ndarray, np.ndarray]:
        times, poss, vels, _ = self._cluster_states
        return times, np.linalg.norm(np.cross(poss, vels), axis=1)

    def conservative(self) -> bool:
        """Keplerian fit and, where clusters exist, a constant angular momentum."""
        if not self.keplerian:
            return False
        if len(self.clusters) >= 2:
            _, h = self._cluster_angular_momentum()
            return bool(np.ptp(h) / np.mean(h) < CONSERVATION_TOLERANCE)
        return True

    def virial_holds(self) -> bool:
        # A bound conservative inverse-square orbit obeys 2<K> + <U> = 0 over whole orbits.
        return self.conservative() and self.orbit.bound

    def kepler_third_law_holds(self) -> bool:
        if len(self.clusters) >= 2:
            if abs(self._cluster_power_law_exponent() + 2) >= INVERSE_SQUARE_TOLERANCE:
                return False
        return self.keplerian

    def power_law_alpha(self) -> float:
        return -self._cluster_power_law_exponent() - 2.0

    def drag_timescale(self) -> float:
        times, h = self._cluster_angular_momentum()
        return fit_exponential_decay(times, h)
