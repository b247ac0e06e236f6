"""Ground truth, one function per quantity, from the world's inputs or from REBOUND's
orbital elements of the relative orbit and the simulation's exact initial state.

Nothing here differentiates positions. Definitions (also in the README):

- The relative orbit is star2 about star1; a, e, P and h = |r x v| are REBOUND's
  elements of it (`orbit(primary=star1)` with the world's G).
- "About the barycentre" quantities use star j's share of the relative orbit:
  star1 moves on the relative ellipse scaled by m2/M, star2 by m1/M.
- Extremes of speed and momentum are in the frame of the data (the drift included)
  over the window; every bound world is watched for at least one whole period, so
  the extremes are taken over the true anomaly f in [0, 2 pi).
- Angular velocity is the star's angular velocity about the barycentre, h / r^2 (the
  same for both stars); acceleration is |a_j| = G m_other / r^2.
- Time averages are over one whole orbit."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq, minimize_scalar

from .constants import DAY_S, G_SI
from .simulate import make_simulation
from .worlds import WorldSpec


@dataclass(frozen=True)
class RelativeOrbit:
    """Elements of star2's orbit about star1 at t = 0 (SI), with the perifocal unit
    vectors p_hat (towards periastron) and q_hat (direction of motion at periastron)
    in the frame of the data, and the barycentre's (constant) velocity."""

    a_m: float
    e: float
    period_s: float
    h_m2s: float
    gm: float
    p_hat: tuple[float, float, float]
    q_hat: tuple[float, float, float]
    barycentre_velocity_ms: tuple[float, float, float]

    @property
    def semi_latus_rectum_m(self) -> float:
        return self.h_m2s**2 / self.gm

    @property
    def periastron_m(self) -> float:
        return self.a_m * (1.0 - self.e)

    @property
    def apoastron_m(self) -> float:
        return self.a_m * (1.0 + self.e)

    def relative_velocity(self, f: np.ndarray) -> np.ndarray:
        """Relative velocity (k, 3) at true anomalies `f` (radians)."""
        f = np.atleast_1d(f)
        scale = math.sqrt(self.gm / self.semi_latus_rectum_m)
        return scale * (np.outer(-np.sin(f), self.p_hat)
                        + np.outer(self.e + np.cos(f), self.q_hat))


@lru_cache(maxsize=256)
def relative_orbit(world: WorldSpec) -> RelativeOrbit:
    """REBOUND's orbital elements of the relative orbit at t = 0, plus its orientation."""
    sim = make_simulation(world, dt=1.0)  # dt is irrelevant: nothing is integrated
    star1, star2 = sim.particles[0], sim.particles[1]
    elements = star2.orbit(primary=star1)
    gm = sim.G * (star1.m + star2.m)
    r = np.array(star2.xyz) - np.array(star1.xyz)
    v = np.array(star2.vxyz) - np.array(star1.vxyz)
    h_vec = np.cross(r, v)
    e_vec = np.cross(v, h_vec) / gm - r / np.linalg.norm(r)
    p_hat = e_vec / np.linalg.norm(e_vec)
    q_hat = np.cross(h_vec / np.linalg.norm(h_vec), p_hat)
    com_v = (star1.m * np.array(star1.vxyz) + star2.m * np.array(star2.vxyz)) / (star1.m + star2.m)
    period = float(elements.P) if elements.e < 1.0 else math.inf
    return RelativeOrbit(float(elements.a), float(elements.e), period, float(elements.h), gm,
                         tuple(p_hat), tuple(q_hat), tuple(com_v))


def _share(world: WorldSpec, star: int) -> float:
    """Star j's share of the relative orbit about the barycentre (m_other / M)."""
    return (world.m2_kg if star == 1 else world.m1_kg) / world.total_mass_kg


def _mass(world: WorldSpec, star: int) -> float:
    return world.m1_kg if star == 1 else world.m2_kg


def _other_mass(world: WorldSpec, star: int) -> float:
    return world.m2_kg if star == 1 else world.m1_kg


# ---- masses (inputs) ---------------------------------------------------------------------
def mass_star(world: WorldSpec, star: int) -> float:
    """Mass of star j (kg)."""
    return _mass(world, star)


def total_mass(world: WorldSpec) -> float:
    """m1 + m2 (kg)."""
    return world.total_mass_kg


def mass_largest_star(world: WorldSpec) -> float:
    """Mass of the heavier star (kg)."""
    return max(world.m1_kg, world.m2_kg)


def reduced_mass(world: WorldSpec) -> float:
    """m1 m2 / (m1 + m2) (kg)."""
    return world.m1_kg * world.m2_kg / world.total_mass_kg


def mass_ratio(world: WorldSpec) -> float:
    """m1 / m2 (dimensionless)."""
    return world.m1_kg / world.m2_kg


# ---- the relative orbit (REBOUND elements) -------------------------------------------------
def period(world: WorldSpec) -> float:
    """Orbital period of the relative orbit (s)."""
    return relative_orbit(world).period_s


def semi_major_axis(world: WorldSpec) -> float:
    """Semi-major axis of the relative orbit (m)."""
    return relative_orbit(world).a_m


def eccentricity(world: WorldSpec) -> float:
    """Eccentricity of the orbit (dimensionless)."""
    return relative_orbit(world).e


def semi_minor_axis(world: WorldSpec) -> float:
    """Semi-minor axis a sqrt(1 - e^2) of the relative orbit (m)."""
    o = relative_orbit(world)
    return o.a_m * math.sqrt(1.0 - o.e**2)


def periastron(world: WorldSpec) -> float:
    """Smallest separation a (1 - e) (m)."""
    return relative_orbit(world).periastron_m


def apoastron(world: WorldSpec) -> float:
    """Largest separation a (1 + e) (m)."""
    return relative_orbit(world).apoastron_m


def specific_angular_momentum(world: WorldSpec) -> float:
    """|r x v| of the relative orbit (m^2/s)."""
    return relative_orbit(world).h_m2s


def areal_velocity(world: WorldSpec) -> float:
    """Area swept per unit time by the separation vector, h / 2 (m^2/s); by Kepler's
    second law the same at periastron and apoastron."""
    return relative_orbit(world).h_m2s / 2.0


def multiply_mass_period(world: WorldSpec) -> float:
    """Factor X on star1's mass giving a 21-day period when star1 dominates the mass:
    P scales as M^(-1/2), so X = (P / 21 d)^2 (dimensionless)."""
    return (period(world) / (21.0 * DAY_S)) ** 2


def roche_lobe_radius(world: WorldSpec) -> float:
    """Roche-lobe radius of star1 by Eggleton (1983) with q = m1/m2, times the relative
    semi-major axis (m)."""
    q13 = mass_ratio(world) ** (1.0 / 3.0)
    return semi_major_axis(world) * 0.49 * q13**2 / (0.6 * q13**2 + math.log1p(q13))


# ---- each star about the barycentre --------------------------------------------------------
def semi_major_axis_star(world: WorldSpec, star: int) -> float:
    """Semi-major axis of star j's ellipse about the barycentre (m)."""
    return _share(world, star) * semi_major_axis(world)


def semi_minor_axis_star(world: WorldSpec, star: int) -> float:
    """Semi-minor axis of star j's ellipse about the barycentre (m)."""
    return _share(world, star) * semi_minor_axis(world)


def orbital_area_star(world: WorldSpec, star: int) -> float:
    """Area pi a_j b_j of star j's ellipse about the barycentre (m^2)."""
    return math.pi * semi_major_axis_star(world, star) * semi_minor_axis_star(world, star)


def avg_distance_com_star(world: WorldSpec, star: int) -> float:
    """Time average over one orbit of star j's distance from the barycentre:
    share * a (1 + e^2 / 2) (m)."""
    o = relative_orbit(world)
    return _share(world, star) * o.a_m * (1.0 + o.e**2 / 2.0)


def max_acceleration_star(world: WorldSpec, star: int) -> float:
    """Largest |a_j| = G m_other / r_p^2 (m/s^2)."""
    return G_SI * _other_mass(world, star) / relative_orbit(world).periastron_m ** 2


def min_acceleration_star(world: WorldSpec, star: int) -> float:
    """Smallest |a_j| = G m_other / r_a^2 (m/s^2)."""
    return G_SI * _other_mass(world, star) / relative_orbit(world).apoastron_m ** 2


def max_angular_velocity_star(world: WorldSpec, star: int) -> float:
    """Largest angular velocity about the barycentre, h / r_p^2 (rad/s)."""
    o = relative_orbit(world)
    return o.h_m2s / o.periastron_m**2


def min_angular_velocity_star(world: WorldSpec, star: int) -> float:
    """Smallest angular velocity about the barycentre, h / r_a^2 (rad/s)."""
    o = relative_orbit(world)
    return o.h_m2s / o.apoastron_m**2


def _speed_in_data_frame(world: WorldSpec, star: int, f: np.ndarray) -> np.ndarray:
    o = relative_orbit(world)
    sign = -1.0 if star == 1 else 1.0  # star1 moves against the relative velocity
    v = np.asarray(o.barycentre_velocity_ms) + sign * _share(world, star) * o.relative_velocity(f)
    return np.linalg.norm(v, axis=1)


def _extreme_speed(world: WorldSpec, star: int, largest: bool) -> float:
    """Extreme of star j's speed over one orbit: a fine grid in true anomaly, then a
    bounded refinement around the best grid point."""
    sign = -1.0 if largest else 1.0
    grid = np.linspace(0.0, 2.0 * np.pi, 4097)
    values = sign * _speed_in_data_frame(world, star, grid)
    i = int(np.argmin(values))
    step = grid[1] - grid[0]
    best = minimize_scalar(lambda f: sign * _speed_in_data_frame(world, star, f)[0],
                           bounds=(grid[i] - step, grid[i] + step), method="bounded",
                           options={"xatol": 1e-12})
    return float(sign * min(best.fun, values[i]))


def max_velocity_star(world: WorldSpec, star: int) -> float:
    """Largest speed of star j in the frame of the data over the window (m/s)."""
    return _extreme_speed(world, star, largest=True)


def min_velocity_star(world: WorldSpec, star: int) -> float:
    """Smallest speed of star j in the frame of the data over the window (m/s)."""
    return _extreme_speed(world, star, largest=False)


def max_momentum_star(world: WorldSpec, star: int) -> float:
    """Largest linear momentum m_j |v_j| in the frame of the data (kg m/s)."""
    return _mass(world, star) * max_velocity_star(world, star)


def min_momentum_star(world: WorldSpec, star: int) -> float:
    """Smallest linear momentum m_j |v_j| in the frame of the data (kg m/s)."""
    return _mass(world, star) * min_velocity_star(world, star)


# ---- time along the orbit ----------------------------------------------------------------------
def _time_since_periastron(o: RelativeOrbit, f: float) -> float:
    """Time to go from periastron to true anomaly f in [0, 2 pi] (Kepler's equation).
    sin(f/2) >= 0 there, so atan2 puts E/2 in [0, pi] on the same branch as f/2."""
    ecc_anomaly = 2.0 * math.atan2(math.sqrt(1.0 - o.e) * math.sin(f / 2.0),
                                   math.sqrt(1.0 + o.e) * math.cos(f / 2.0))
    mean_anomaly = ecc_anomaly - o.e * math.sin(ecc_anomaly)
    return mean_anomaly / (2.0 * math.pi) * o.period_s


def time_fraction_acceleration_below_mean(world: WorldSpec) -> float:
    """Fraction of one orbit during which star1's |a| = G m2 / r^2 is below its
    time average over the orbit. <1/r^2> = 1 / (a^2 sqrt(1 - e^2)), so |a| is below
    the mean while r > r* = a (1 - e^2)^(1/4); with r = a (1 - e cos E) that is the
    arc of eccentric anomaly where cos E < (1 - r*/a) / e (dimensionless)."""
    o = relative_orbit(world)
    r_star_over_a = (1.0 - o.e**2) ** 0.25
    e_star = math.acos((1.0 - r_star_over_a) / o.e)
    return 1.0 - (e_star - o.e * math.sin(e_star)) / math.pi


def _path_speed(o: RelativeOrbit, f: float) -> float:
    """|dr/df| of the relative ellipse (star j's path is the same shape, scaled)."""
    p = o.semi_latus_rectum_m
    denom = 1.0 + o.e * math.cos(f)
    return math.hypot(p / denom, p * o.e * math.sin(f) / denom**2)


def travel_time_path_fraction(world: WorldSpec, fraction: float) -> float:
    """Time star1 takes, starting at a periastron passage, to cover `fraction` of the
    length of its closed orbital path about the barycentre (s)."""
    o = relative_orbit(world)
    total = quad(lambda f: _path_speed(o, f), 0.0, 2.0 * math.pi, limit=200,
                 epsabs=0.0, epsrel=1e-12)[0]

    def missing(f: float) -> float:
        return quad(lambda x: _path_speed(o, x), 0.0, f, limit=200, epsabs=0.0,
                    epsrel=1e-12)[0] - fraction * total

    f_end = brentq(missing, 0.0, 2.0 * math.pi, xtol=1e-13)
    return _time_since_periastron(o, f_end)


# ---- energy and physical facts --------------------------------------------------------------
def total_energy(world: WorldSpec) -> float:
    """K + U in the frame of the data from the simulation's exact initial state. For
    Newtonian conservative worlds it is constant, so it equals its time average (J)."""
    sim = make_simulation(world, dt=1.0)
    s1, s2 = sim.particles[0], sim.particles[1]
    kinetic = 0.5 * s1.m * np.dot(s1.vxyz, s1.vxyz) + 0.5 * s2.m * np.dot(s2.vxyz, s2.vxyz)
    r = float(np.linalg.norm(np.subtract(s2.xyz, s1.xyz)))
    return float(kinetic - sim.G * s1.m * s2.m / r)


def is_bound(world: WorldSpec) -> bool:
    """True when the energy of the relative motion, v^2/2 - G M / r, is negative."""
    pos, vel = world.initial_state()
    r = float(np.linalg.norm(pos[1] - pos[0]))
    v2 = float(np.sum((vel[1] - vel[0]) ** 2))
    return v2 / 2.0 - G_SI * world.total_mass_kg / r < 0.0


def kepler_third_law_holds(world: WorldSpec) -> bool:
    """P^2 / a^3 = 4 pi^2 / (G M) holds for Newtonian gravity and fails for a modified
    law (tests check both against an independent integration)."""
    return world.newtonian


def virial_theorem_holds(world: WorldSpec) -> bool:
    """2<K> + <U> = 0 (time averages, barycentre at rest) holds for a Newtonian bound
    orbit and fails when drag drains energy (tests check both independently)."""
    return world.newtonian and not world.has_drag


def linear_drag_timescale(world: WorldSpec) -> float:
    """tau in a_i = -v_i / tau (s)."""
    if world.drag_tau_s is None:
        raise ValueError(f"world {world.id} has no drag")
    return world.drag_tau_s


def modified_gravity_alpha(world: WorldSpec) -> float:
    """alpha in F = G m1 m2 / r^(2 + alpha) (dimensionless)."""
    if world.force_alpha is None:
        raise ValueError(f"world {world.id} obeys Newtonian gravity")
    return world.force_alpha


TruthFn = Callable[[WorldSpec], float | bool]
