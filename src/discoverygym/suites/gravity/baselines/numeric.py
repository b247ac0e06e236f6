"""`NumericSolution`: the classical expert solution on a table of positions.

Local-polynomial derivatives, refined peaks of the separation, masses from
|a| r^2 / G, time averages over whole orbits, an exponential fit of the decaying
angular momentum for drag and a log-log fit of acceleration against separation for a
modified force law. Dense tables give it everything; sparse ones blur its peaks and
derivatives (that is the point of the uniform baseline)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .measurements import (
    CONSERVATION_TOLERANCE,
    INVERSE_SQUARE_TOLERANCE,
    VIRIAL_TOLERANCE,
    Track,
    fit_drift,
    fit_exponential_decay,
    fit_power_law_exponent,
    interior_extrema,
    local_polynomial_derivatives,
    passage_period,
    refine_extremum,
    whole_orbit_weights,
)


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
