"""Estimators for the gravity suite's scripted experts: position tables in, SI answers out.

Two families share one task table (`answer`):

- `NumericSolution` is the classical expert solution on a table of positions:
  local-polynomial derivatives, refined peaks of the separation, masses from
  |a| r^2 / G, time averages over whole orbits, an exponential fit of the decaying
  angular momentum for drag and a log-log fit of acceleration against separation
  for a modified force law. Dense tables give it everything; sparse ones blur
  its peaks and derivatives (that is the point of the uniform baseline).
- `ModelSolution` fits a two-body Keplerian model (orbit in its plane, period,
  time of periastron, mass fraction, barycentre drift) to every observation by
  least squares and derives each quantity from the model analytically. Velocity
  and acceleration estimates from tight observation clusters supply what a
  Keplerian model cannot (drag timescale, force-law exponent).

Everything here is pure: arrays or DataFrames in, numbers out, SI throughout.
Nothing here knows which world it is looking at."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

POSITION_COLUMNS = ("star1_x", "star1_y", "star1_z", "star2_x", "star2_y", "star2_z")
DAY_S = 86400.0
TARGET_PERIOD_S = 21 * DAY_S  # the period asked for by multiply_mass_period
VIRIAL_TOLERANCE = 1e-3  # the task's own criterion: |2<K> + <U>| <= 0.1 % of |<U>|
# A fixed ellipse reproduces a Newtonian orbit to the interpolation accuracy of the
# data (~1e-6 of the orbit size); a precessing or decaying orbit misses by percents.
KEPLER_RESIDUAL_TOLERANCE = 1e-3
# Relative change of the angular momentum over the data above which the orbit is
# dissipative (the drag worlds lose tens of percent; numerical noise is ~1e-6).
CONSERVATION_TOLERANCE = 1e-3
# Separation exponent of the force: -2 for Newton; the modified worlds sit 0.03 away.
INVERSE_SQUARE_TOLERANCE = 0.01


# ---------------------------------------------------------------------------------
# Tables


@dataclass(frozen=True)
class Track:
    """Positions of both stars at sorted, distinct times (SI: s and m)."""

    time_s: np.ndarray  # (N,)
    star1_m: np.ndarray  # (N, 3)
    star2_m: np.ndarray  # (N, 3)

    @property
    def relative_m(self) -> np.ndarray:
        """Separation vector star2 - star1, (N, 3) in m."""
        return self.star2_m - self.star1_m

    @property
    def separation_m(self) -> np.ndarray:
        return np.linalg.norm(self.relative_m, axis=1)

    def __len__(self) -> int:
        return len(self.time_s)


def track_from_table(table: pd.DataFrame, units: dict[str, Any]) -> Track:
    """Convert a table in display units (columns time, star1_x, ..., star2_z) to an SI
    `Track`: sorted by time, repeated times merged (their rows averaged)."""
    if len(table) == 0:
        raise ValueError("the table has no rows")
    frame = table[["time", *POSITION_COLUMNS]].astype(float)
    frame = frame.groupby("time", sort=True).mean().reset_index()
    time_s = frame["time"].to_numpy() * float(units["time_to_s"])
    xyz = frame[list(POSITION_COLUMNS)].to_numpy() * float(units["length_to_m"])
    return Track(time_s=time_s, star1_m=xyz[:, :3], star2_m=xyz[:, 3:])


def local_polynomial_derivatives(time_s: np.ndarray, values: np.ndarray, width: int = 7,
                                 degree: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """First and second time derivatives of `values` (N, D) at each sample, from a
    least-squares polynomial of `degree` through the `width` nearest samples in
    index (centred where possible). Works for uneven time steps."""
    n = len(time_s)
    width = min(width, n)
    degree = min(degree, width - 1)
    start = np.clip(np.arange(n) - width // 2, 0, n - width)
    idx = start[:, None] + np.arange(width)[None, :]
    dt = time_s[idx] - time_s[:, None]
    scale = np.max(np.abs(dt), axis=1, keepdims=True)
    scale[scale == 0] = 1.0
    x = dt / scale
    vander = x[:, :, None] ** np.arange(degree + 1)[None, None, :]
    coeffs = np.linalg.pinv(vander) @ values[idx]  # (N, degree+1, D)
    first = coeffs[:, 1, :] / scale
    second = 2.0 * coeffs[:, 2, :] / scale**2 if degree >= 2 else np.zeros_like(first)
    return first, second


def refine_extremum(time_s: np.ndarray, values: np.ndarray, i: int) -> tuple[float, float]:
    """Time and value of the extremum of `values` near sample `i`: the vertex of the
    parabola through samples i-1, i, i+1 (the sample itself at an edge)."""
    if i <= 0 or i >= len(values) - 1:
        return float(time_s[i]), float(values[i])
    t = time_s[i - 1:i + 2] - time_s[i]
    coeffs = np.polyfit(t, values[i - 1:i + 2], 2)
    if coeffs[0] == 0:
        return float(time_s[i]), float(values[i])
    vertex = -coeffs[1] / (2 * coeffs[0])
    vertex = float(np.clip(vertex, t[0], t[2]))
    return float(time_s[i] + vertex), float(np.polyval(coeffs, vertex))


def interior_extrema(time_s: np.ndarray, values: np.ndarray,
                     kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Refined (times, values) of the interior local minima (kind='min') or maxima."""
    sign = 1.0 if kind == "min" else -1.0
    y = sign * values
    inner = np.arange(1, len(y) - 1)
    is_ext = (y[inner] <= y[inner - 1]) & (y[inner] < y[inner + 1])
    found = [refine_extremum(time_s, values, int(i)) for i in inner[is_ext]]
    if not found:
        return np.empty(0), np.empty(0)
    times, vals = np.array(found).T
    return times, vals


def passage_period(times: np.ndarray) -> float | None:
    """Period from a series of passage times (some may be missing): slope of the
    passage time against its orbit number."""
    if len(times) < 2:
        return None
    gaps = np.diff(times)
    guess = float(np.min(gaps[gaps > 0.5 * np.median(gaps)]))
    number = np.round((times - times[0]) / guess)
    if number[-1] == 0:
        return None
    slope, _ = np.polyfit(number, times, 1)
    return float(slope)


def whole_orbit_weights(time_s: np.ndarray, start_s: float, end_s: float) -> np.ndarray:
    """Trapezoid weights for a time average over [start_s, end_s] using the samples
    inside it (zero weight outside)."""
    inside = (time_s >= start_s) & (time_s <= end_s)
    w = np.zeros(len(time_s))
    t = time_s[inside]
    if len(t) < 2:
        w[inside] = 1.0
        return w / w.sum()
    local = np.zeros(len(t))
    local[:-1] += 0.5 * np.diff(t)
    local[1:] += 0.5 * np.diff(t)
    w[inside] = local
    return w / w.sum()


def eggleton_roche_radius(separation_m: float, mass_ratio: float) -> float:
    """Roche-lobe radius (Eggleton 1983) of the star whose mass over the companion's is
    `mass_ratio`, for a binary of semi-major axis `separation_m` (m)."""
    q23 = mass_ratio ** (2.0 / 3.0)
    return separation_m * 0.49 * q23 / (0.6 * q23 + np.log1p(mass_ratio ** (1.0 / 3.0)))


def fit_exponential_decay(time_s: np.ndarray, values: np.ndarray) -> float:
    """e-folding time (s) of a quantity decaying as exp(-t / tau): a line through
    log(values) against time."""
    slope, _ = np.polyfit(time_s, np.log(values), 1)
    return float(-1.0 / slope) if slope < 0 else float("inf")


def fit_power_law_exponent(separation_m: np.ndarray, acceleration: np.ndarray) -> float:
    """Slope of log(acceleration) against log(separation) (-2 for Newtonian gravity)."""
    slope, _ = np.polyfit(np.log(separation_m), np.log(acceleration), 1)
    return float(slope)


def fit_drift(time_s: np.ndarray, points_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Straight line R0 + V t through points (N, 3): returns (R0 in m, V in m/s)."""
    design = np.column_stack([np.ones_like(time_s), time_s])
    coeffs = _scaled_lstsq(design, points_m)
    return coeffs[0], coeffs[1]


def _scaled_lstsq(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least squares with unit-norm columns: seconds (~1e9) next to metres (~1e12) next
    to ones would otherwise cost several digits."""
    norms = np.linalg.norm(design, axis=0)
    norms[norms == 0] = 1.0
    coeffs, *_ = np.linalg.lstsq(design / norms, target, rcond=None)
    return coeffs / (norms[:, None] if coeffs.ndim == 2 else norms)


# ---------------------------------------------------------------------------------
# The classical expert solution on a table


class NumericSolution:
    """Quantities estimated directly from a table of positions (no orbit model)."""

    def __init__(self, track: Track, gravitational_constant: float) -> None:
        if len(track) < 5:
            raise ValueError("need at least 5 distinct times")
        self.track = track
        self.G = gravitational_constant

    # -- ingredients ----------------------------------------------------------
    @cached_property
    def _derivatives(self) -> tuple[np.ndarray, ...]:
        t = self.track.time_s
        both = np.hstack([self.track.star1_m, self.track.star2_m])
        vel, acc = local_polynomial_derivatives(t, both)
        return vel[:, :3], vel[:, 3:], acc[:, :3], acc[:, 3:]

    @property
    def _inner(self) -> slice:
        # Derivatives at the table's edges rest on one-sided fits: leave them out.
        n = len(self.track)
        k = 3 if n > 12 else 0
        return slice(k, n - k)

    @cached_property
    def _peri(self) -> tuple[np.ndarray, np.ndarray]:
        return interior_extrema(self.track.time_s, self.track.separation_m, "min")

    @cached_property
    def _apo(self) -> tuple[np.ndarray, np.ndarray]:
        return interior_extrema(self.track.time_s, self.track.separation_m, "max")

    # The extreme over every passage, not a typical passage: sparse samples catch each
    # passage at a different phase, and the closest look is the best one (dense
    # samples catch them all alike).
    def periastron(self) -> float:
        _, values = self._peri
        return float(np.min(np.concatenate([values, self.track.separation_m])))

    def apoastron(self) -> float:
        _, values = self._apo
        return float(np.max(np.concatenate([values, self.track.separation_m])))

    def period(self) -> float:
        for times in (self._peri[0], self._apo[0]):
            period = passage_period(times)
            if period is not None:
                return period
        # Fewer than two passages: time for the separation vector to turn once.
        rel = self.track.relative_m
        angle = np.unwrap(np.arctan2(rel[:, 1], rel[:, 0]))
        turned = np.abs(angle - angle[0])
        if turned[-1] < 2 * np.pi:
            return float((self.track.time_s[-1] - self.track.time_s[0]) * 2 * np.pi / turned[-1])
        return float(np.interp(2 * np.pi, turned, self.track.time_s) - self.track.time_s[0])

    def semi_major_axis(self) -> float:
        return 0.5 * (self.periastron() + self.apoastron())

    def eccentricity(self) -> float:
        rp, ra = self.periastron(), self.apoastron()
        return (ra - rp) / (ra + rp)

    @cached_property
    def masses(self) -> tuple[float, float]:
        """(m1, m2) in kg from |a_i| r^2 / G: each star's acceleration is set by the
        other star's mass."""
        _, _, acc1, acc2 = self._derivatives
        r2 = self.track.separation_m**2
        inner = self._inner
        m2 = np.median(np.linalg.norm(acc1, axis=1)[inner] * r2[inner]) / self.G
        m1 = np.median(np.linalg.norm(acc2, axis=1)[inner] * r2[inner]) / self.G
        return float(m1), float(m2)

    @cached_property
    def _drift(self) -> tuple[np.ndarray, np.ndarray]:
        m1, m2 = self.masses
        centre = (m1 * self.track.star1_m + m2 * self.track.star2_m) / (m1 + m2)
        return fit_drift(self.track.time_s, centre)

    def _barycentric(self, star: int) -> np.ndarray:
        r0, v = self._drift
        centre = r0 + self.track.time_s[:, None] * v
        pos = self.track.star1_m if star == 1 else self.track.star2_m
        return pos - centre

    def specific_angular_momentum(self) -> float:
        vel1, vel2, _, _ = self._derivatives
        h = np.linalg.norm(np.cross(self.track.relative_m, vel2 - vel1), axis=1)
        return float(np.median(h[self._inner]))

    def _speed(self, star: int) -> np.ndarray:
        vel1, vel2, _, _ = self._derivatives
        return np.linalg.norm(vel1 if star == 1 else vel2, axis=1)

    def speed_extremes(self, star: int) -> tuple[float, float]:
        """(min, max) speed of a star in the frame of the data, m/s."""
        speed = self._speed(star)
        t = self.track.time_s
        inner = np.arange(len(t))[self._inner]
        lo = int(inner[np.argmin(speed[inner])])
        hi = int(inner[np.argmax(speed[inner])])
        return refine_extremum(t, speed, lo)[1], refine_extremum(t, speed, hi)[1]

    def _orbit_span(self) -> tuple[float, float]:
        """Whole orbits: first to last periastron passage, or else the whole table."""
        times = self._peri[0]
        if len(times) >= 2:
            return float(times[0]), float(times[-1])
        return float(self.track.time_s[0]), float(self.track.time_s[-1])

    def time_fraction_acceleration_below_mean(self) -> float:
        # |a1| = G m2 / r^2, so the fraction is that of time spent with 1/r^2 below its mean.
        w = whole_orbit_weights(self.track.time_s, *self._orbit_span())
        inv_r2 = 1.0 / self.track.separation_m**2
        mean = np.sum(w * inv_r2)
        return float(np.sum(w[inv_r2 < mean]))

    def average_distance_from_barycentre(self, star: int) -> float:
        w = whole_orbit_weights(self.track.time_s, *self._orbit_span())
        return float(np.sum(w * np.linalg.norm(self._barycentric(star), axis=1)))

    def travel_time(self, fraction: float, star: int = 1) -> float:
        """Time from a periastron passage until the star has covered `fraction` of the
        length of one barycentric orbit."""
        t = self.track.time_s
        period = self.period()
        start = self._peri[0][0] if len(self._peri[0]) else float(t[0])
        grid = np.linspace(start, start + period, 20001)
        pos = self._barycentric(star)
        path = np.column_stack([np.interp(grid, t, pos[:, k]) for k in range(3)])
        length = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=1))])
        return float(np.interp(fraction * length[-1], length, grid) - start)

    def _energies(self, barycentric: bool) -> tuple[np.ndarray, np.ndarray]:
        vel1, vel2, _, _ = self._derivatives
        if barycentric:
            drift = self._drift[1]
            vel1, vel2 = vel1 - drift, vel2 - drift
        m1, m2 = self.masses
        kinetic = 0.5 * m1 * np.sum(vel1**2, axis=1) + 0.5 * m2 * np.sum(vel2**2, axis=1)
        potential = -self.G * m1 * m2 / self.track.separation_m
        return kinetic, potential

    def total_energy(self) -> float:
        kinetic, potential = self._energies(barycentric=False)
        inner = self._inner
        return float(np.median((kinetic + potential)[inner]))

    def is_bound(self) -> bool:
        vel1, vel2, _, _ = self._derivatives
        m1, m2 = self.masses
        v2 = np.sum((vel2 - vel1) ** 2, axis=1)
        specific = 0.5 * v2 - self.G * (m1 + m2) / self.track.separation_m
        return bool(np.median(specific[self._inner]) < 0)

    def angular_momentum_change(self) -> float:
        """Relative change of the relative orbit's angular momentum over the table, from
        a straight-line fit of log h (0 for a conservative central force)."""
        vel1, vel2, _, _ = self._derivatives
        h = np.linalg.norm(np.cross(self.track.relative_m, vel2 - vel1), axis=1)
        inner = self._inner
        t = self.track.time_s[inner]
        slope, _ = np.polyfit(t, np.log(h[inner]), 1)
        return float(abs(slope) * (t[-1] - t[0]))

    def virial_holds(self) -> bool:
        # A dissipative orbit is no virial equilibrium even where its time averages
        # happen to come close: first require constant angular momentum.
        if self.angular_momentum_change() > CONSERVATION_TOLERANCE:
            return False
        kinetic, potential = self._energies(barycentric=True)
        w = whole_orbit_weights(self.track.time_s, *self._orbit_span())
        mean_k, mean_u = np.sum(w * kinetic), np.sum(w * potential)
        return bool(abs(2 * mean_k + mean_u) <= VIRIAL_TOLERANCE * abs(mean_u))

    def _force_exponent(self) -> float:
        _, _, acc1, acc2 = self._derivatives
        inner = self._inner
        acc = np.linalg.norm(acc2 - acc1, axis=1)[inner]
        return fit_power_law_exponent(self.track.separation_m[inner], acc)

    def kepler_third_law_holds(self) -> bool:
        return abs(self._force_exponent() + 2.0) < INVERSE_SQUARE_TOLERANCE

    def power_law_alpha(self) -> float:
        return -self._force_exponent() - 2.0

    def drag_timescale(self) -> float:
        # Gravity is central, so only the drag changes h: dh/dt = -h / tau exactly.
        vel1, vel2, _, _ = self._derivatives
        h = np.linalg.norm(np.cross(self.track.relative_m, vel2 - vel1), axis=1)
        inner = self._inner
        return fit_exponential_decay(self.track.time_s[inner], h[inner])


# ---------------------------------------------------------------------------------
# Keplerian model


def solve_kepler(mean_anomaly: np.ndarray, eccentricity: float) -> np.ndarray:
    """Eccentric anomaly E with E - e sin E = M (elliptic) or hyperbolic anomaly H with
    e sinh H - H = M (e > 1), by Newton iteration."""
    m = np.asarray(mean_anomaly, dtype=float)
    e = float(eccentricity)
    if e < 1:
        wrapped = np.mod(m + np.pi, 2 * np.pi) - np.pi
        x = wrapped + 0.85 * e * np.sign(np.sin(wrapped))
        for _ in range(60):
            step = (x - e * np.sin(x) - wrapped) / (1 - e * np.cos(x))
            x = x - step
            if np.max(np.abs(step)) < 1e-14:
                break
        return x + (m - wrapped)
    x = np.arcsinh(m / e)
    for _ in range(100):
        step = (e * np.sinh(x) - x - m) / (e * np.cosh(x) - 1)
        x = x - step
        if np.max(np.abs(step)) < 1e-14:
            break
    return x


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
        mean = np.abs(self.mean_motion) * (np.asarray(time_s) - self.periastron_time_s)
        return solve_kepler(mean, self.eccentricity)

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
    grid = np.arange(n_min, n_max, 0.05 / span)
    phasor = np.exp(1j * m)[None, :] * np.exp(-1j * grid[:, None] * t[None, :])
    power = np.abs(phasor.sum(axis=1)) / len(t)
    k = int(np.argmax(power))
    n = grid[k]
    for _ in range(3):
        phase = np.angle(np.sum(np.exp(1j * (mean - n * time_s))))
        turns = np.round((n * time_s + phase - mean) / (2 * np.pi))
        n, phase = np.polyfit(time_s, mean + 2 * np.pi * turns, 1)
    tp = -phase / n
    return float(power[k]), sense, float(n), float(tp)


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
    coeffs = _scaled_lstsq(design, target)
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


# ---------------------------------------------------------------------------------
# The task table: one entry per task id, written once for both families.

Solution = NumericSolution | ModelSolution


def _mass_share(sol: Solution, star: int) -> float:
    """Size of a star's barycentric orbit relative to the relative orbit: the other
    star's mass fraction."""
    m1, m2 = sol.masses
    return (m2 if star == 1 else m1) / (m1 + m2)


def _semi_minor(sol: Solution) -> float:
    return sol.semi_major_axis() * np.sqrt(max(1 - sol.eccentricity() ** 2, 0.0))


def _other_mass(sol: Solution, star: int) -> float:
    m1, m2 = sol.masses
    return m2 if star == 1 else m1


def _own_mass(sol: Solution, star: int) -> float:
    m1, m2 = sol.masses
    return m1 if star == 1 else m2


def _tasks() -> dict[str, Callable[[Solution], Any]]:
    table: dict[str, Callable[[Solution], Any]] = {
        "period": lambda s: s.period(),
        "eccentricity": lambda s: s.eccentricity(),
        "semi_major_axis": lambda s: s.semi_major_axis(),
        "semi_minor_axis": _semi_minor,
        "periastron": lambda s: s.periastron(),
        "apoastron": lambda s: s.apoastron(),
        "specific_angular_momentum": lambda s: s.specific_angular_momentum(),
        "area_swept_over_time_apo": lambda s: 0.5 * s.specific_angular_momentum(),
        "area_swept_over_time_peri": lambda s: 0.5 * s.specific_angular_momentum(),
        "total_mass": lambda s: sum(s.masses),
        "reduced_mass": lambda s: s.masses[0] * s.masses[1] / sum(s.masses),
        "mass_ratio": lambda s: s.masses[0] / s.masses[1],
        "mass_largest_star": lambda s: max(s.masses),
        "multiply_mass_period": lambda s: (s.period() / TARGET_PERIOD_S) ** 2,
        "roche_lobe_radius": lambda s: eggleton_roche_radius(
            s.semi_major_axis(), s.masses[0] / s.masses[1]),
        "time_fraction_acceleration_below_mean":
            lambda s: s.time_fraction_acceleration_below_mean(),
        "travel_time_20pct_path": lambda s: s.travel_time(0.2),
        "travel_time_70pct_path": lambda s: s.travel_time(0.7),
        "total_energy": lambda s: s.total_energy(),
        "is_bound": lambda s: s.is_bound(),
        "virial_theorem": lambda s: s.virial_holds(),
        "kepler_3rd_law": lambda s: s.kepler_third_law_holds(),
        "modified_gravity_power_law": lambda s: s.power_law_alpha(),
        "linear_drag": lambda s: s.drag_timescale(),
    }
    per_star = {
        "mass_star{}": _own_mass,
        "semi_major_axis_star{}": lambda s, k: _mass_share(s, k) * s.semi_major_axis(),
        "semi_minor_axis_star{}": lambda s, k: _mass_share(s, k) * _semi_minor(s),
        "orbital_area_star{}": lambda s, k: np.pi * _mass_share(s, k) ** 2
        * s.semi_major_axis() * _semi_minor(s),
        "avg_distance_COM_star{}": lambda s, k: s.average_distance_from_barycentre(k),
        "max_acceleration_star{}": lambda s, k: s.G * _other_mass(s, k) / s.periastron() ** 2,
        "min_acceleration_star{}": lambda s, k: s.G * _other_mass(s, k) / s.apoastron() ** 2,
        "max_angular_velocity_star{}":
            lambda s, k: s.specific_angular_momentum() / s.periastron() ** 2,
        "min_angular_velocity_star{}":
            lambda s, k: s.specific_angular_momentum() / s.apoastron() ** 2,
        "max_velocity_star{}": lambda s, k: s.speed_extremes(k)[1],
        "min_velocity_star{}": lambda s, k: s.speed_extremes(k)[0],
        "max_momentum_star{}": lambda s, k: _own_mass(s, k) * s.speed_extremes(k)[1],
        "min_momentum_star{}": lambda s, k: _own_mass(s, k) * s.speed_extremes(k)[0],
    }
    for pattern, fn in per_star.items():
        for star in (1, 2):
            table[pattern.format(star)] = (lambda f, k: (lambda s: f(s, k)))(fn, star)
    return table


TASKS: dict[str, Callable[[Solution], Any]] = _tasks()


def answer(task_id: str, solution: Solution) -> float | bool:
    """The SI answer to `task_id` from a solution (numeric or model)."""
    if task_id not in TASKS:
        raise KeyError(f"no estimator for task {task_id!r}")
    value = TASKS[task_id](solution)
    return bool(value) if isinstance(value, bool | np.bool_) else float(value)
