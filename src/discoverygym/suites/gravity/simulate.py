"""Simulate a world with REBOUND, cache the dense trajectory on disk, and interpolate it.

Integrators (explicit, per the suite spec): WHFast with dt <= P/5000 for plain
Newtonian worlds (for two bodies its Kepler step is exact); IAS15 whenever a
non-Newtonian force is on, stepping exactly onto the output grid. A modified law *replaces* Newtonian gravity
(`sim.gravity = "none"` and the law applied as an additional force); linear drag is
an additional, velocity-dependent force.

The dense output is a regular time grid from t = 0 to the end of the window holding
positions AND velocities of both stars. The grid step is a fixed fraction of the
shortest dynamical time r/|v| of the relative orbit met in the window, so a cubic
Hermite interpolant of it is accurate to well below 1e-6 of the separation."""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import rebound
from scipy.interpolate import CubicHermiteSpline

from ...core.array_cache import ArrayCache
from .constants import G_SI
from .worlds import WorldSpec

# Bump when the way trajectories are computed or stored changes (invalidates caches).
SCHEME_VERSION = 2
# Grid steps per shortest dynamical time r/|v|: 8 keeps the Hermite error near 1e-8.
STEPS_PER_DYNAMICAL_TIME = 8
MIN_ROWS = 5001
WHFAST_STEPS_PER_PERIOD = 5000

ForceTerm = Callable[[ctypes.Array], None]


@dataclass
class Trajectory:
    """Dense SI output of one world: `times_s` (n,), `positions_m` and `velocities_ms`
    (n, 2, 3) for star1 and star2 in the frame of the data."""

    times_s: np.ndarray
    positions_m: np.ndarray
    velocities_ms: np.ndarray

    @property
    def duration_s(self) -> float:
        return float(self.times_s[-1])

    @cached_property
    def _spline(self) -> CubicHermiteSpline:
        n = len(self.times_s)
        return CubicHermiteSpline(self.times_s, self.positions_m.reshape(n, 6),
                                  self.velocities_ms.reshape(n, 6), extrapolate=False)

    def positions_at(self, times_s: np.ndarray) -> np.ndarray:
        """Positions (k, 2, 3) in metres at `times_s` inside [0, duration]. Cubic Hermite
        interpolation of the dense positions and velocities; never extrapolates."""
        t = np.asarray(times_s, dtype=float)
        if t.size and (t.min() < 0.0 or t.max() > self.duration_s):
            raise ValueError("times outside the simulated window")
        return self._spline(t).reshape(t.size, 2, 3)


# ---- force terms --------------------------------------------------------------------
# A term adds its acceleration to `p`, a flat ctypes view of REBOUND's two particle
# structs: star j's x, y, z, vx, vy, vz, ax, ay, az start at index j * _STRIDE. Plain
# float arithmetic on it is several times faster than numpy on such tiny arrays.
# Terms are composed by `force_terms`; the integrator never branches on the law.
_STRIDE = ctypes.sizeof(rebound.Particle) // 8
_B = _STRIDE  # offset of star2


def modified_gravity_term(world: WorldSpec) -> ForceTerm:
    """F = G m1 m2 / r^(2 + alpha) between the stars, used with `sim.gravity = "none"`."""
    m1, m2, half_power = world.m1_kg, world.m2_kg, (3.0 + world.alpha) / 2.0

    def add(p) -> None:
        dx, dy, dz = p[_B] - p[0], p[_B + 1] - p[1], p[_B + 2] - p[2]
        k = G_SI / (dx * dx + dy * dy + dz * dz) ** half_power
        p[6] += k * m2 * dx
        p[7] += k * m2 * dy
        p[8] += k * m2 * dz
        p[_B + 6] -= k * m1 * dx
        p[_B + 7] -= k * m1 * dy
        p[_B + 8] -= k * m1 * dz

    return add


def linear_drag_term(world: WorldSpec) -> ForceTerm:
    """a_i = -v_i / tau on both stars (velocities in the frame of the data)."""
    rate = 1.0 / float(world.drag_tau_s)  # type: ignore[arg-type]

    def add(p) -> None:
        for base in (0, _B):
            p[base + 6] -= p[base + 3] * rate
            p[base + 7] -= p[base + 4] * rate
            p[base + 8] -= p[base + 5] * rate

    return add


def force_terms(world: WorldSpec) -> list[ForceTerm]:
    """The non-Newtonian force terms of `world` (empty for plain Newtonian gravity)."""
    terms = []
    if not world.newtonian:
        terms.append(modified_gravity_term(world))
    if world.has_drag:
        terms.append(linear_drag_term(world))
    return terms


def make_simulation(world: WorldSpec, *, dt: float | None = None) -> rebound.Simulation:
    """A REBOUND simulation of `world` at t = 0, configured in plain sight: SI units
    through G, WHFast for plain Newtonian worlds (`dt` defaults to P/5000), IAS15 with
    the additional forces otherwise."""
    sim = rebound.Simulation()
    sim.G = G_SI
    pos, vel = world.initial_state()
    for m, p, v in zip((world.m1_kg, world.m2_kg), pos, vel, strict=True):
        sim.add(m=m, x=p[0], y=p[1], z=p[2], vx=v[0], vy=v[1], vz=v[2])
    terms = force_terms(world)
    if not terms:
        sim.integrator = "whfast"
        sim.dt = float(dt) if dt is not None else world.kepler_period_s() / WHFAST_STEPS_PER_PERIOD
        return sim
    sim.integrator = "ias15"
    if not world.newtonian:
        sim.gravity = "none"  # the modified law replaces Newton's, it is not added to it
    sim.force_is_velocity_dependent = 1 if world.has_drag else 0
    # The two particle structs stay at one address (no particle is added or removed).
    flat = (ctypes.c_double * (2 * _STRIDE)).from_address(
        ctypes.addressof(sim._particles.contents))
    replaces_gravity = not world.newtonian

    def additional_forces(_sim_pointer) -> None:
        if replaces_gravity:  # with gravity "none" the accelerations are ours to set
            flat[6] = flat[7] = flat[8] = flat[_B + 6] = flat[_B + 7] = flat[_B + 8] = 0.0
        for term in terms:
            term(flat)

    sim.additional_forces = additional_forces  # REBOUND keeps the ctypes wrapper alive
    return sim


def _read_state(sim: rebound.Simulation, pos: np.ndarray, vel: np.ndarray) -> None:
    sim.serialize_particle_data(xyz=pos, vxvyvz=vel)  # copies on the C side


def _min_dynamical_time_estimate(world: WorldSpec) -> float:
    """Shortest r/|v| of the relative orbit expected in the window (periastron for
    bound orbits, shrunk by the drag's decay of the angular momentum; the start for
    unbound ones, which move away from periastron)."""
    pos, vel = world.initial_state()
    r0 = float(np.linalg.norm(pos[1] - pos[0]))
    v0 = float(np.linalg.norm(vel[1] - vel[0]))
    if not world.is_bound:
        return r0 / v0
    e = world.eccentricity
    # r_p = p/(1+e), v_p = v_c (1+e) with p = r0 for the recipe's orbit
    tau = r0 / (1.0 + e) / (world.circular_speed_ms() * (1.0 + e))
    if world.has_drag:
        # h decays as exp(-t/tau); r_p/v_p scales as h^3 (p ~ h^2, v_p ~ h/r_p)
        tau *= math.exp(-3.0 * world.duration_s / float(world.drag_tau_s))
    return tau


def _integrate_grid(world: WorldSpec, n_rows: int) -> Trajectory:
    duration = world.duration_s
    times = np.linspace(0.0, duration, n_rows)
    step = duration / (n_rows - 1)
    pos = np.empty((n_rows, 2, 3))
    vel = np.empty((n_rows, 2, 3))
    if not force_terms(world):
        dt_max = (world.kepler_period_s() / WHFAST_STEPS_PER_PERIOD if world.is_bound else step)
        substeps = max(1, math.ceil(step / dt_max - 1e-9))
        sim = make_simulation(world, dt=step / substeps)
        _read_state(sim, pos[0], vel[0])
        for i in range(1, n_rows):
            sim.steps(substeps)
            _read_state(sim, pos[i], vel[i])
    else:
        sim = make_simulation(world)
        # IAS15 with its step pinned to the grid step (epsilon = 0 turns adaptivity off):
        # the grid step is ~10x below IAS15's own choice, so every step is exact to
        # round-off, and one step per row is 3-4x cheaper than stopping an adaptive run
        # at each row (tests compare with adaptive IAS15 and with SciPy).
        sim.integrator.epsilon = 0.0
        sim.dt = step
        _read_state(sim, pos[0], vel[0])
        for i in range(1, n_rows):
            sim.steps(1)
            _read_state(sim, pos[i], vel[i])
    return Trajectory(times, pos, vel)


def simulate(world: WorldSpec) -> Trajectory:
    """Integrate `world` over its window on a regular grid fine enough for < 1e-6
    interpolation error (refined until the grid resolves the fastest passage)."""
    duration = world.duration_s
    step = _min_dynamical_time_estimate(world) / STEPS_PER_DYNAMICAL_TIME
    n_rows = max(MIN_ROWS, math.ceil(duration / step) + 1)
    for _ in range(6):
        traj = _integrate_grid(world, n_rows)
        rel_r = np.linalg.norm(traj.positions_m[:, 1] - traj.positions_m[:, 0], axis=1)
        rel_v = np.linalg.norm(traj.velocities_ms[:, 1] - traj.velocities_ms[:, 0], axis=1)
        grid_step = duration / (n_rows - 1)
        resolution = float(np.min(rel_r / rel_v)) / grid_step
        if resolution >= 0.9 * STEPS_PER_DYNAMICAL_TIME:
            return traj
        n_rows = math.ceil((n_rows - 1) * STEPS_PER_DYNAMICAL_TIME / resolution * 1.1) + 1
    return traj


# ---- disk cache and in-process memo ---------------------------------------------------
def cache_key(world: WorldSpec) -> str:
    """A hash of every input that changes the SI trajectory (not the display units)."""
    payload = json.dumps({"scheme": SCHEME_VERSION, "steps": STEPS_PER_DYNAMICAL_TIME,
                          "min_rows": MIN_ROWS, "world": world.key()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


_CACHE = ArrayCache("gravity", "trajectories", memory_items=64)


def cache_path(world: WorldSpec) -> Path:
    return _CACHE.path(cache_key(world), "trajectory")


def _pack(traj: Trajectory) -> np.ndarray:
    n = len(traj.times_s)
    return np.hstack([traj.times_s[:, None], traj.positions_m.reshape(n, 6),
                      traj.velocities_ms.reshape(n, 6)])


def _unpack(table: np.ndarray) -> Trajectory:
    n = len(table)
    return Trajectory(table[:, 0].copy(), table[:, 1:7].reshape(n, 2, 3).copy(),
                      table[:, 7:13].reshape(n, 2, 3).copy())


def trajectory(world: WorldSpec) -> Trajectory:
    """The world's dense trajectory: from this process's memory, else the disk cache,
    else a fresh simulation (written to the cache atomically)."""
    return _CACHE.get(cache_key(world), "trajectory",
                      lambda: {"table": _pack(simulate(world))},
                      lambda arrays: _unpack(arrays["table"]))


def clear_memo() -> None:
    """Forget trajectories held in this process (the disk cache stays)."""
    _CACHE.clear_memory()
