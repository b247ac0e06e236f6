"""Gravity worlds: the REBOUND simulation, the dense cache and the interpolant, checked
against independent references (adaptive IAS15 runs, SciPy solve_ivp, conservation laws)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import rebound
from scipy.integrate import solve_ivp

from discoverygym.suites.gravity import simulate as sim_mod
from discoverygym.suites.gravity.constants import G_SI, UNIT_SYSTEMS
from discoverygym.suites.gravity.simulate import cache_key, cache_path, trajectory
from discoverygym.suites.gravity.worlds import (
    PUBLISHED_WORLDS,
    WORLD_IDS,
    get_world,
    procedural_world,
)

CONSERVATIVE = [w for w in WORLD_IDS if PUBLISHED_WORLDS[w].conservative_newtonian]
MODIFIED = ["MG197", "MG203", "MG197-PM"]
DRAG = ["DRAG1", "DRAG2", "DRAG2-PM"]


@pytest.fixture(scope="session")
def trajectories():
    """All 16 published worlds, simulated once per test session (memoised in-process)."""
    return {w: trajectory(PUBLISHED_WORLDS[w]) for w in WORLD_IDS}


def _separation(pos: np.ndarray) -> np.ndarray:
    return np.linalg.norm(pos[..., 1, :] - pos[..., 0, :], axis=-1)


def test_sixteen_published_worlds():
    assert len(WORLD_IDS) == 16
    assert set(WORLD_IDS) == {"A", "B", "C", "PM1", "PM2", "B-yrAU", "B-cgs", "ELL", "ELL1",
                              "DRAG1", "DRAG2", "DRAG2-PM", "UNB", "MG197", "MG203",
                              "MG197-PM"}
    assert PUBLISHED_WORLDS["MG197"].force_alpha == pytest.approx(-0.03)
    assert PUBLISHED_WORLDS["MG203"].force_alpha == pytest.approx(0.03)
    assert PUBLISHED_WORLDS["DRAG2"].drag_tau_s == 8.3e8
    assert PUBLISHED_WORLDS["B-yrAU"].unit_system is UNIT_SYSTEMS["yr-AU"]


@pytest.mark.parametrize("world_id", WORLD_IDS)
def test_grid_starts_at_zero_with_the_initial_state(trajectories, world_id):
    world, traj = PUBLISHED_WORLDS[world_id], trajectories[world_id]
    assert traj.times_s[0] == 0.0
    assert traj.times_s[-1] == pytest.approx(world.duration_s, rel=1e-14)
    assert len(traj.times_s) >= 5001
    assert np.allclose(np.diff(traj.times_s), traj.times_s[1], rtol=1e-9)  # regular grid
    pos, vel = world.initial_state()
    assert np.array_equal(traj.positions_m[0], pos)
    assert np.allclose(traj.velocities_ms[0], vel, rtol=0, atol=1e-9)


@pytest.mark.parametrize("world_id", WORLD_IDS)
def test_interpolation_matches_a_direct_adaptive_ias15_run(trajectories, world_id):
    """Positions at arbitrary times agree with an independent adaptive IAS15 run to
    well below 1e-6 of the separation (WHFast worlds are checked by IAS15 too)."""
    world, traj = PUBLISHED_WORLDS[world_id], trajectories[world_id]
    step = traj.times_s[1]
    rng = np.random.default_rng(7)
    times = np.sort(np.concatenate([[1e-3 * step, 0.5 * step, traj.duration_s],
                                    rng.uniform(0, traj.duration_s, 12)]))
    direct = sim_mod.make_simulation(world, dt=1.0)
    direct.integrator = "ias15"  # adaptive, the independent reference
    if not world.newtonian:
        direct.gravity = "none"
    exact = np.empty((len(times), 2, 3))
    for i, t in enumerate(times):
        direct.integrate(t, exact_finish_time=1)
        exact[i] = [direct.particles[j].xyz for j in range(2)]
    interpolated = traj.positions_at(times)
    error = np.max(np.abs(interpolated - exact), axis=(1, 2)) / _separation(exact)
    assert error.max() < 1e-6


def test_no_extrapolation_outside_the_window(trajectories):
    traj = trajectories["A"]
    with pytest.raises(ValueError):
        traj.positions_at([-1.0])
    with pytest.raises(ValueError):
        traj.positions_at([traj.duration_s * (1 + 1e-9)])
    assert np.array_equal(traj.positions_at([0.0])[0], traj.positions_m[0])


@pytest.mark.parametrize("world_id", WORLD_IDS)
def test_initial_conditions_follow_the_recipe(world_id):
    """REBOUND's elements of the relative orbit give back the spec's e; the barycentre
    moves with the drift (at rest without drift)."""
    world = PUBLISHED_WORLDS[world_id]
    sim = sim_mod.make_simulation(world, dt=1.0)
    s1, s2 = sim.particles[0], sim.particles[1]
    rel = np.subtract(s2.xyz, s1.xyz)
    rel_v = np.subtract(s2.vxyz, s1.vxyz)
    r0 = np.linalg.norm(rel)
    v_c = np.sqrt(G_SI * (s1.m + s2.m) / r0 ** (1 + world.alpha))  # the law's own v_c
    assert rel_v @ rel / r0 == pytest.approx(world.eccentricity * v_c, rel=1e-12)
    assert np.linalg.norm(np.cross(rel, rel_v)) / r0 == pytest.approx(v_c, rel=1e-12)
    if world.newtonian:  # then e is the orbit's eccentricity
        assert s2.orbit(primary=s1, G=G_SI).e == pytest.approx(world.eccentricity, rel=1e-9)
    com_v = (s1.m * np.array(s1.vxyz) + s2.m * np.array(s2.vxyz)) / (s1.m + s2.m)
    assert np.allclose(com_v, world.drift_ms, rtol=0, atol=1e-9)
    assert sim.G == G_SI == 6.674e-11
    assert np.cross(rel, rel_v)[2] < 0  # the tangent is rel x z-hat
    if world.newtonian:
        assert s2.orbit(primary=s1, G=G_SI).h == pytest.approx(world.initial_separation_m * world.circular_speed_ms(),
                                        rel=1e-12)


@pytest.mark.parametrize("world_id", CONSERVATIVE)
def test_newtonian_worlds_conserve_energy_and_angular_momentum(trajectories, world_id):
    world, traj = PUBLISHED_WORLDS[world_id], trajectories[world_id]
    m = np.array([world.m1_kg, world.m2_kg])
    v2 = np.sum(traj.velocities_ms**2, axis=2)
    energy = 0.5 * v2 @ m - G_SI * m[0] * m[1] / _separation(traj.positions_m)
    ang = np.einsum("j,njk->nk", m, np.cross(traj.positions_m, traj.velocities_ms))
    assert np.ptp(energy) <= 1e-9 * np.max(np.abs(energy))
    assert np.max(np.abs(ang - ang[0])) <= 1e-9 * np.linalg.norm(ang[0])


def _scipy_trajectory(world, times, *, alpha: float, tau: float | None, newton_too=False):
    """An independent integration: positions and velocities of both stars in SI."""
    m1, m2 = world.m1_kg, world.m2_kg
    rate = 0.0 if tau is None else 1.0 / tau

    def rhs(_t, y):
        r1, r2, v1, v2 = y[0:3], y[3:6], y[6:9], y[9:12]
        d = r2 - r1
        r = np.sqrt(d @ d)
        k = G_SI / r ** (3.0 + alpha)
        if newton_too:
            k += G_SI / r**3
        return np.concatenate([v1, v2, k * m2 * d - rate * v1, -k * m1 * d - rate * v2])

    pos, vel = world.initial_state()
    y0 = np.concatenate([pos[0], pos[1], vel[0], vel[1]])
    sol = solve_ivp(rhs, (0.0, times[-1]), y0, method="DOP853", t_eval=times, rtol=1e-11,
                    atol=1e-6)
    assert sol.success
    return sol.y[:6].T.reshape(-1, 2, 3), sol.y[6:].T.reshape(-1, 2, 3)


@pytest.mark.parametrize("world_id", MODIFIED + DRAG)
def test_non_newtonian_worlds_match_an_independent_scipy_integration(trajectories, world_id):
    world, traj = PUBLISHED_WORLDS[world_id], trajectories[world_id]
    rows = np.linspace(0, len(traj.times_s) - 1, 25).astype(int)
    times = traj.times_s[rows]
    pos, vel = _scipy_trajectory(world, times, alpha=world.alpha, tau=world.drag_tau_s)
    sep = _separation(pos)
    assert np.max(np.abs(traj.positions_m[rows] - pos), axis=(1, 2)).max() / sep.min() < 1e-6
    speed = np.linalg.norm(vel[:, 1] - vel[:, 0], axis=1)
    # velocities amplify the tiny phase differences of two long runs near periastron
    assert np.max(np.abs(traj.velocities_ms[rows] - vel)) / speed.min() < 1e-5


@pytest.mark.parametrize("world_id", MODIFIED)
def test_modified_law_replaces_newton_rather_than_adding_to_it(trajectories, world_id):
    world, traj = PUBLISHED_WORLDS[world_id], trajectories[world_id]
    times = traj.times_s[[0, len(traj.times_s) // 3]]
    both, _ = _scipy_trajectory(world, times, alpha=world.alpha, tau=None, newton_too=True)
    newton, _ = _scipy_trajectory(world, times, alpha=0.0, tau=None)
    ours = traj.positions_m[[0, len(traj.times_s) // 3]]
    sep = _separation(ours[1])
    assert np.max(np.abs(ours[1] - both[1])) > 0.05 * sep
    assert np.max(np.abs(ours[1] - newton[1])) > 0.01 * sep


def test_drag_shrinks_the_orbit_and_slows_the_drift(trajectories):
    traj = trajectories["DRAG2-PM"]
    world = PUBLISHED_WORLDS["DRAG2-PM"]
    m = np.array([world.m1_kg, world.m2_kg])
    com_v = np.einsum("j,njk->nk", m, traj.velocities_ms) / m.sum()
    # the drag acts on the barycentre too: exp(-t/tau) exactly
    expected = np.outer(np.exp(-traj.times_s / world.drag_tau_s), world.drift_ms)
    assert np.allclose(com_v, expected, rtol=0, atol=1e-6 * np.linalg.norm(world.drift_ms))
    sep = _separation(traj.positions_m)
    half = len(sep) // 2
    assert sep[half:].max() < sep[:half].max()


def test_cache_is_reused_and_keyed_by_world_parameters(trajectories):
    world = PUBLISHED_WORLDS["B"]
    path = cache_path(world)
    assert path.exists()
    from discoverygym.core.paths import cache_dir

    assert cache_dir("gravity") in path.parents
    sim_mod.clear_memo()
    again = trajectory(world)  # from disk
    assert np.array_equal(again.positions_m, trajectories["B"].positions_m)
    assert np.array_equal(again.velocities_ms, trajectories["B"].velocities_ms)
    # the display units do not change the trajectory; any physical input does
    assert cache_key(PUBLISHED_WORLDS["B-cgs"]) == cache_key(world)
    assert cache_key(dataclasses.replace(world, eccentricity=0.61)) != cache_key(world)
    assert cache_key(dataclasses.replace(world, drag_tau_s=1e9)) != cache_key(world)


def test_a_damaged_cache_file_is_recomputed(trajectories):
    world = PUBLISHED_WORLDS["ELL1"]
    path = cache_path(world)
    path.write_bytes(b"not a numpy file")
    sim_mod.clear_memo()
    again = trajectory(world)
    assert np.array_equal(again.positions_m, trajectories["ELL1"].positions_m)
    with np.load(path) as data:
        assert data["table"].shape == (len(again.times_s), 13)


def test_procedural_worlds_are_deterministic_and_follow_the_priors():
    assert procedural_world(11) == procedural_world(11)
    assert procedural_world(11) != procedural_world(12)
    assert get_world("proc-11") == procedural_world(11)
    worlds = [procedural_world(seed) for seed in range(300)]
    kinds = {("drag" if w.has_drag else "modified" if not w.newtonian
              else "bound" if w.is_bound else "unbound") for w in worlds}
    assert kinds == {"drag", "modified", "bound", "unbound"}
    assert {w.units for w in worlds} == set(UNIT_SYSTEMS)
    msun = 1.989e30
    for w in worlds:
        assert 0.1 * msun <= w.m1_kg <= 30 * msun and 0.1 * msun <= w.m2_kg <= 30 * msun
        assert (1.1 <= w.eccentricity <= 2.0) if not w.is_bound else 0.1 <= w.eccentricity <= 0.9
        assert w.duration_s > 0
        if w.force_alpha is not None:
            assert 0.01 <= abs(w.force_alpha) <= 0.05


@pytest.mark.parametrize("seed", [5, 9])
def test_procedural_worlds_simulate_accurately(seed):
    world = procedural_world(seed)
    traj = trajectory(world)
    times = np.linspace(0, traj.duration_s, 7)[1:]
    direct = sim_mod.make_simulation(world, dt=1.0)
    direct.integrator = "ias15"
    if not world.newtonian:
        direct.gravity = "none"
    for t, interp in zip(times, traj.positions_at(times), strict=True):
        direct.integrate(t, exact_finish_time=1)
        exact = np.array([direct.particles[j].xyz for j in range(2)])
        assert np.max(np.abs(interp - exact)) / _separation(exact) < 1e-6


def test_rebound_is_the_integrator():
    assert isinstance(sim_mod.make_simulation(PUBLISHED_WORLDS["A"]), rebound.Simulation)
    assert str(sim_mod.make_simulation(PUBLISHED_WORLDS["A"]).integrator) == "whfast"
    mg = sim_mod.make_simulation(PUBLISHED_WORLDS["MG197"])
    assert str(mg.integrator) == "ias15" and str(mg.gravity) == "none"
    drag = sim_mod.make_simulation(PUBLISHED_WORLDS["DRAG1"])
    assert str(drag.integrator) == "ias15" and drag.force_is_velocity_dependent
