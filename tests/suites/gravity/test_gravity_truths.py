"""Gravity truths against independent computations: Kepler's laws and energy from the
initial conditions, the dense REBOUND states, fresh REBOUND runs, and SciPy
integrations for the drag worlds and the modified law. Plus the task table and the
oracle check (the truth passes every one of the 206 pairs)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.integrate import cumulative_trapezoid, solve_ivp

from discoverygym.core import get_suite
from discoverygym.suites.gravity import truths as T
from discoverygym.suites.gravity.constants import G_SI, MSUN_KG
from discoverygym.suites.gravity.scoring import score_answer
from discoverygym.suites.gravity.simulate import make_simulation, trajectory
from discoverygym.suites.gravity.tasks import FULL_OBS_THRESHOLD, TASKS, published_pairs
from discoverygym.suites.gravity.worlds import PUBLISHED_WORLDS, WORLD_IDS

W = PUBLISHED_WORLDS
BOUND = ["A", "B", "C", "PM1", "PM2", "B-yrAU", "B-cgs", "ELL", "ELL1"]
AT_REST = ["A", "B", "C", "ELL", "ELL1"]


@pytest.fixture(scope="session")
def trajectories():
    return {w: trajectory(W[w]) for w in WORLD_IDS}


def _ic(world):
    """Independent quantities from the initial-condition recipe (no REBOUND)."""
    m = world.m1_kg + world.m2_kg
    r0 = math.dist(world.star1_pos_m, world.star2_pos_m)
    v_c = math.sqrt(G_SI * m / r0)
    a = r0 / (1 - world.eccentricity**2)
    return m, r0, v_c, a


# ---- the task table -------------------------------------------------------------------
def test_fifty_tasks_over_206_pairs():
    assert len(TASKS) == 50
    pairs = published_pairs()
    assert len(pairs) == 206 and len(set(pairs)) == 206
    assert len(get_suite("gravity").tasks()) == 50
    assert len(get_suite("gravity").default_episodes()) == 206
    for task_id, world_id in pairs:
        assert TASKS[task_id].applies_to(W[world_id]), (task_id, world_id)


@pytest.mark.parametrize("task_id, worlds, threshold", [
    ("roche_lobe_radius", {"ELL"}, 0.05),
    ("modified_gravity_power_law", {"MG197", "MG203", "MG197-PM"}, 0.70),
    ("linear_drag", {"DRAG1", "DRAG2", "DRAG2-PM"}, 0.15),
    ("max_velocity_star1", {"A", "B", "C", "PM1", "PM2", "B-yrAU", "B-cgs"}, 0.20),
    ("total_energy", {"UNB", "A", "B", "C", "PM1", "PM2"}, 0.40),
    ("is_bound", {"A", "B", "C", "PM1", "PM2", "B-yrAU", "B-cgs", "UNB"}, 0.0),
    ("travel_time_20pct_path", {"A", "B", "C"}, 0.70),
    ("travel_time_70pct_path", {"A", "B", "C"}, 0.15),
    ("periastron", {"A", "B", "C", "ELL1"}, 0.05),
    ("eccentricity", {"A", "B", "C", "PM1", "PM2", "ELL"}, 0.05),
])
def test_table_rows(task_id, worlds, threshold):
    task = TASKS[task_id]
    assert set(task.worlds) == worlds
    assert task.budget_threshold == pytest.approx(threshold)
    assert task.threshold("full-obs") == FULL_OBS_THRESHOLD == 0.05


# ---- the scoring rule ------------------------------------------------------------------
def test_scoring_rule():
    assert score_answer(104.9, 100.0, answer_type="number", threshold=0.05).passed
    s = score_answer(105.1, 100.0, answer_type="number", threshold=0.05)
    assert not s.passed and s.metric == "relative_error" and s.value == pytest.approx(0.051)
    assert score_answer(-95.5, -100.0, answer_type="number", threshold=0.05).passed
    assert score_answer(True, True, answer_type="boolean", threshold=0.0).passed
    assert not score_answer(False, True, answer_type="boolean", threshold=0.0).passed
    for bad, kind in ((1, "boolean"), (True, "number"), ("3", "number"), (math.nan, "number")):
        s = score_answer(bad, 1.0 if kind == "number" else True, answer_type=kind, threshold=0.5)
        assert not s.passed and "malformed" in s.error


# ---- Newtonian truths vs the initial conditions (Kepler, vis-viva) -----------------------
@pytest.mark.parametrize("world_id", BOUND)
def test_kepler_third_law_and_vis_viva_from_initial_conditions(world_id):
    world = W[world_id]
    m, r0, v_c, a = _ic(world)
    e = world.eccentricity
    assert T.semi_major_axis(world) == pytest.approx(a, rel=1e-10)
    assert T.eccentricity(world) == pytest.approx(e, rel=1e-10)
    assert T.period(world) == pytest.approx(2 * math.pi * math.sqrt(a**3 / (G_SI * m)), rel=1e-10)
    v0_sq = v_c**2 * (1 + e**2)  # speed of the relative orbit at t = 0
    assert v0_sq == pytest.approx(G_SI * m * (2 / r0 - 1 / a), rel=1e-10)  # vis-viva
    assert T.specific_angular_momentum(world) == pytest.approx(r0 * v_c, rel=1e-10)
    assert T.periastron(world) == pytest.approx(a * (1 - e), rel=1e-10)
    assert T.apoastron(world) == pytest.approx(a * (1 + e), rel=1e-10)
    assert T.semi_minor_axis(world) == pytest.approx(a * math.sqrt(1 - e * e), rel=1e-10)


@pytest.mark.parametrize("world_id", ["UNB", "A", "B", "C", "PM1", "PM2"])
def test_total_energy_from_initial_conditions(world_id, trajectories):
    world = W[world_id]
    m, r0, v_c, _ = _ic(world)
    mu = world.m1_kg * world.m2_kg / m
    drift_sq = float(np.dot(world.drift_ms, world.drift_ms))
    expected = (0.5 * mu * v_c**2 * (1 + world.eccentricity**2) - G_SI * world.m1_kg
                * world.m2_kg / r0 + 0.5 * m * drift_sq)
    assert T.total_energy(world) == pytest.approx(expected, rel=1e-10)
    # and it is the time average over the window (it is conserved)
    traj = trajectories[world_id]
    masses = np.array([world.m1_kg, world.m2_kg])
    sep = np.linalg.norm(traj.positions_m[:, 1] - traj.positions_m[:, 0], axis=1)
    energy = 0.5 * np.sum(traj.velocities_ms**2, axis=2) @ masses - G_SI * masses.prod() / sep
    assert energy.mean() == pytest.approx(T.total_energy(world), rel=1e-9)


def test_masses_and_roche_lobe_from_inputs():
    a = W["A"]
    assert T.mass_star(a, 1) == 21.3 * MSUN_KG and T.mass_star(a, 2) == 3.1 * MSUN_KG
    assert T.mass_largest_star(W["C"]) == 0.63 * MSUN_KG  # star2 is the heavier in C
    assert T.total_mass(a) == pytest.approx(24.4 * MSUN_KG)
    assert T.reduced_mass(a) == pytest.approx(21.3 * 3.1 / 24.4 * MSUN_KG)
    assert T.mass_ratio(a) == pytest.approx(21.3 / 3.1)
    # Eggleton at q = 1: r_L / a = 0.49 / (0.6 + ln 2) = 0.37892 (his table: 0.379)
    equal = dataclasses.replace(W["ELL"], m2_kg=W["ELL"].m1_kg)
    assert T.roche_lobe_radius(equal) / T.semi_major_axis(equal) == pytest.approx(0.37892,
                                                                                   abs=1e-5)
    assert T.multiply_mass_period(a) == pytest.approx((T.period(a) / (21 * 86400)) ** 2)


# ---- truths vs the dense REBOUND states -----------------------------------------------
def _one_period_rows(world_id, trajectories):
    traj = trajectories[world_id]
    n = int(round(T.period(W[world_id]) / traj.times_s[1]))
    return traj, n


@pytest.mark.parametrize("world_id", AT_REST)
def test_time_averages_and_areas_from_dense_states(world_id, trajectories):
    world = W[world_id]
    traj, n = _one_period_rows(world_id, trajectories)
    pos = traj.positions_m[: n + 1]
    masses = np.array([world.m1_kg, world.m2_kg])
    com = np.einsum("j,njk->nk", masses, pos) / masses.sum()
    for star in (1, 2):
        rel = pos[:, star - 1] - com
        dist = np.linalg.norm(rel, axis=1)
        # time average over one period: trapezoid on the regular grid
        average = np.trapezoid(dist, dx=1.0) / n
        assert average == pytest.approx(T.avg_distance_com_star(world, star), rel=1e-4)
        shoelace = 0.5 * abs(np.sum(rel[:-1, 0] * rel[1:, 1] - rel[1:, 0] * rel[:-1, 1]))
        assert shoelace == pytest.approx(T.orbital_area_star(world, star), rel=1e-3)
        assert 0.5 * (dist.max() + dist.min()) == pytest.approx(
            T.semi_major_axis_star(world, star), rel=1e-3)


@pytest.mark.parametrize("world_id", ["A", "B", "C", "ELL"])
def test_fraction_of_time_with_acceleration_below_mean(world_id, trajectories):
    world = W[world_id]
    traj, n = _one_period_rows(world_id, trajectories)
    sep = np.linalg.norm(traj.positions_m[:n, 1] - traj.positions_m[:n, 0], axis=1)
    accel = G_SI * world.m2_kg / sep**2  # Newton's law on the simulated separations
    fraction = np.mean(accel < accel.mean())
    assert fraction == pytest.approx(T.time_fraction_acceleration_below_mean(world), abs=2e-3)


@pytest.mark.parametrize("world_id", BOUND)
def test_extremes_from_dense_states(world_id, trajectories):
    """Extremes over the exact simulated states (velocities from REBOUND, not from
    differences). The sampled maximum sits a little below the true one."""
    world, traj = W[world_id], trajectories[world_id]
    r = traj.positions_m[:, 1] - traj.positions_m[:, 0]
    v = traj.velocities_ms[:, 1] - traj.velocities_ms[:, 0]
    sep = np.linalg.norm(r, axis=1)
    omega = np.abs(np.cross(r, v)[:, 2]) / sep**2
    for star in (1, 2):
        speed = np.linalg.norm(traj.velocities_ms[:, star - 1], axis=1)
        other = world.m2_kg if star == 1 else world.m1_kg
        accel = G_SI * other / sep**2
        for sampled, truth, kind in (
            (speed.max(), T.max_velocity_star(world, star), "max"),
            (speed.min(), T.min_velocity_star(world, star), "min"),
            (accel.max(), T.max_acceleration_star(world, star), "max"),
            (accel.min(), T.min_acceleration_star(world, star), "min"),
            (omega.max(), T.max_angular_velocity_star(world, star), "max"),
            (omega.min(), T.min_angular_velocity_star(world, star), "min"),
        ):
            if kind == "max":
                assert truth * (1 - 2e-2) <= sampled <= truth * (1 + 1e-9)
            else:
                assert truth * (1 - 1e-9) <= sampled <= truth * (1 + 1e-3)
        mass = world.m1_kg if star == 1 else world.m2_kg
        assert T.max_momentum_star(world, star) == pytest.approx(
            mass * T.max_velocity_star(world, star))
    assert sep.min() == pytest.approx(T.periastron(world), rel=1e-2)
    assert sep.max() == pytest.approx(T.apoastron(world), rel=1e-5)


@pytest.mark.parametrize("world_id", ["A", "B", "C"])
@pytest.mark.parametrize("fraction", [0.2, 0.7])
def test_travel_time_with_a_fresh_rebound_run_from_periastron(world_id, fraction):
    """Integrate from the next periastron passage with IAS15, add up star1's path
    length about the barycentre, and find when it reaches the fraction."""
    world = W[world_id]
    sim = make_simulation(world, dt=1.0)
    sim.integrator = "ias15"
    orbit = sim.particles[1].orbit(primary=sim.particles[0])
    t_peri = (2 * math.pi - orbit.M) / orbit.n
    times = t_peri + np.linspace(0.0, orbit.P, 40001)
    speed = np.empty(len(times))
    m1, m2 = world.m1_kg, world.m2_kg
    for i, t in enumerate(times):
        sim.integrate(t, exact_finish_time=1)
        v1, v2 = np.array(sim.particles[0].vxyz), np.array(sim.particles[1].vxyz)
        speed[i] = np.linalg.norm(v1 - (m1 * v1 + m2 * v2) / (m1 + m2))
    path = cumulative_trapezoid(speed, times, initial=0.0)
    t_frac = np.interp(fraction * path[-1], path, times - t_peri)
    assert T.travel_time_path_fraction(world, fraction) == pytest.approx(t_frac, rel=1e-5)


# ---- physical facts checked against independent integrations ---------------------------
def _scipy_run(world, t_end, n=20001):
    m1, m2, alpha = world.m1_kg, world.m2_kg, world.alpha
    rate = 0.0 if world.drag_tau_s is None else 1.0 / world.drag_tau_s

    def rhs(_t, y):
        d = y[3:6] - y[0:3]
        k = G_SI / np.sqrt(d @ d) ** (3.0 + alpha)
        return np.concatenate([y[6:12], k * m2 * d - rate * y[6:9], -k * m1 * d - rate * y[9:12]])

    pos, vel = world.initial_state()
    times = np.linspace(0.0, t_end, n)
    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([pos.ravel(), vel.ravel()]),
                    method="DOP853", t_eval=times, rtol=1e-10, atol=1e-6)
    assert sol.success
    return times, sol.y[:6].T.reshape(-1, 2, 3), sol.y[6:].T.reshape(-1, 2, 3)


def _kepler_ratio(world, times, pos):
    """(P^2 / a^3) / (4 pi^2 / G M) with P the time between periastron passages and a the
    mean of the extreme separations, measured on a trajectory."""
    sep = np.linalg.norm(pos[:, 1] - pos[:, 0], axis=1)
    minima = [i for i in range(1, len(sep) - 1) if sep[i] < sep[i - 1] and sep[i] <= sep[i + 1]]
    period = (times[minima[-1]] - times[minima[0]]) / (len(minima) - 1)
    a = 0.5 * (sep.min() + sep.max())
    return period**2 / a**3 / (4 * math.pi**2 / (G_SI * world.total_mass_kg))


@pytest.mark.parametrize("world_id", ["MG197", "MG203", "MG197-PM"])
def test_kepler_third_law_fails_under_the_modified_law(world_id):
    world = W[world_id]
    times, pos, _ = _scipy_run(world, world.duration_s, n=40001)
    assert abs(_kepler_ratio(world, times, pos) - 1) > 0.05
    assert T.kepler_third_law_holds(world) is False
    assert T.modified_gravity_alpha(world) == world.force_alpha


@pytest.mark.parametrize("world_id", ["A", "B", "C"])
def test_kepler_third_law_holds_for_newtonian_worlds(world_id, trajectories):
    traj = trajectories[world_id]
    assert abs(_kepler_ratio(W[world_id], traj.times_s, traj.positions_m) - 1) < 5e-3
    assert T.kepler_third_law_holds(W[world_id]) is True


def _virial_residual(world, times, pos, vel):
    masses = np.array([world.m1_kg, world.m2_kg])
    sep = np.linalg.norm(pos[:, 1] - pos[:, 0], axis=1)
    kinetic = 0.5 * np.sum(vel**2, axis=2) @ masses
    potential = -G_SI * masses.prod() / sep
    return abs(2 * kinetic.mean() + potential.mean()) / abs(potential.mean())


@pytest.mark.parametrize("world_id", ["DRAG1", "DRAG2", "DRAG2-PM"])
def test_virial_theorem_fails_with_drag(world_id):
    world = W[world_id]
    times, pos, vel = _scipy_run(world, world.duration_s)
    assert _virial_residual(world, times, pos, vel) > 1e-3
    assert T.virial_theorem_holds(world) is False
    assert T.linear_drag_timescale(world) == world.drag_tau_s


@pytest.mark.parametrize("world_id", ["A", "B", "C"])
def test_virial_theorem_holds_for_newtonian_worlds(world_id, trajectories):
    traj = trajectories[world_id]
    n = int(round(10 * T.period(W[world_id]) / traj.times_s[1]))  # whole orbits
    residual = _virial_residual(W[world_id], traj.times_s[:n], traj.positions_m[:n],
                                traj.velocities_ms[:n])
    assert residual < 1e-3
    assert T.virial_theorem_holds(W[world_id]) is True


def test_boundness(trajectories):
    assert T.is_bound(W["UNB"]) is False
    traj = trajectories["UNB"]
    sep = np.linalg.norm(traj.positions_m[:, 1] - traj.positions_m[:, 0], axis=1)
    rel_v = traj.velocities_ms[:, 1] - traj.velocities_ms[:, 0]
    assert np.all(np.diff(sep) > 0)  # moving apart for the whole window
    energy = 0.5 * np.sum(rel_v**2, axis=1) - G_SI * W["UNB"].total_mass_kg / sep
    assert np.all(energy > 0)
    for world_id in BOUND:
        assert T.is_bound(W[world_id]) is True


def test_units_do_not_change_the_truth():
    for task_id in ("period", "max_velocity_star1", "semi_major_axis_star1", "mass_star1"):
        values = {TASKS[task_id].truth(W[w]) for w in ("B", "B-yrAU", "B-cgs")}
        assert len(values) == 1


# ---- the oracle: the truth passes every pair, a clearly wrong answer fails ---------------
@pytest.mark.parametrize("protocol", ["full-obs", "budget-obs-100"])
def test_submitting_the_truth_passes_all_206_pairs(protocol, trajectories):
    suite = get_suite("gravity")
    for spec in suite.episodes(protocol=protocol):
        episode = suite.episode(spec.task_id, seed=spec.seed, **spec.options)
        truth = episode._truth()
        assert isinstance(truth, bool) == (TASKS[spec.task_id].answer_type == "boolean")
        result = episode.call("submit", {"answer": truth})
        assert not result.is_error, result.text
        record = episode.record(agent="oracle")
        assert record.passed, (spec.task_id, spec.options)
        threshold = TASKS[spec.task_id].threshold(protocol)
        wrong = (not truth) if isinstance(truth, bool) else truth * (1 + 1.01 * threshold + 1e-3)
        episode = suite.episode(spec.task_id, seed=spec.seed, **spec.options)
        episode.call("submit", {"answer": wrong})
        assert not episode.record().passed
