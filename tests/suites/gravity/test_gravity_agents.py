"""Gravity experts: estimators against independent synthetic two-body orbits, unit
conversion, agents that only use the view, and a small run on the real suite."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import solve_ivp

from discoverygym.suites.gravity.baselines import answers as gravity_answers
from discoverygym.suites.gravity.baselines import expert as gravity
from discoverygym.suites.gravity.baselines import planning as gravity_planning
from discoverygym.suites.gravity.baselines.answers import answer
from discoverygym.suites.gravity.baselines.kepler_model import ModelSolution
from discoverygym.suites.gravity.baselines.measurements import Track, track_from_table
from discoverygym.suites.gravity.baselines.numeric import NumericSolution

G = 6.674e-11
MSUN = 1.989e30
AU = 1.496e11
YEAR = 3.154e7
COLUMNS = ["time", "star1_x", "star1_y", "star1_z", "star2_x", "star2_y", "star2_z"]


# ---- independent synthetic worlds -------------------------------------------------


def eccentric_anomaly_bisection(mean: np.ndarray, e: float) -> np.ndarray:
    """E with E - e sin E = M by bisection (a different method from the agents' Newton
    solver): the left side grows monotonically in E and M - e <= E <= M + e, so 60
    halvings of that bracket reach machine precision."""
    mean = np.asarray(mean, dtype=float)
    lo, hi = mean - e, mean + e
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = mid - e * np.sin(mid) > mean
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return 0.5 * (lo + hi)


class KeplerWorld:
    """A closed-form Newtonian binary with a drifting barycentre."""

    def __init__(self, m1=9.6 * MSUN, m2=3.1 * MSUN, a=2.0e12, e=0.8, omega=0.7,
                 t_peri=3.0e7, drift=(700.0, 700.0, 0.0), origin=(4e12, 3e12, 0.0)):
        self.m1, self.m2, self.a, self.e, self.omega = m1, m2, a, e, omega
        self.total = m1 + m2
        self.n = np.sqrt(G * self.total / a**3)
        self.period = 2 * np.pi / self.n
        self.t_peri = t_peri
        self.drift = np.array(drift)
        self.origin = np.array(origin)

    def states(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Positions and velocities of both stars (m, m/s)."""
        ecc = eccentric_anomaly_bisection(self.n * (t - self.t_peri), self.e)
        root = np.sqrt(1 - self.e**2)
        x, y = self.a * (np.cos(ecc) - self.e), self.a * root * np.sin(ecc)
        rate = self.n / (1 - self.e * np.cos(ecc))
        vx, vy = -self.a * np.sin(ecc) * rate, self.a * root * np.cos(ecc) * rate
        c, s = np.cos(self.omega), np.sin(self.omega)
        rel = np.column_stack([c * x - s * y, s * x + c * y, np.zeros_like(x)])
        vrel = np.column_stack([c * vx - s * vy, s * vx + c * vy, np.zeros_like(x)])
        centre = self.origin + t[:, None] * self.drift
        f1, f2 = self.m1 / self.total, self.m2 / self.total
        return (centre - f2 * rel, centre + f1 * rel,
                self.drift - f2 * vrel, self.drift + f1 * vrel)

    def track(self, t: np.ndarray) -> Track:
        r1, r2, _, _ = self.states(t)
        return Track(t, r1, r2)

    def table(self, t: np.ndarray, time_to_s=1.0, length_to_m=1.0) -> pd.DataFrame:
        r1, r2, _, _ = self.states(t)
        return pd.DataFrame(np.column_stack([t / time_to_s, r1 / length_to_m, r2 / length_to_m]),
                            columns=COLUMNS)


def integrated_track(t_end: float, n_rows: int, *, power: float = 2.0,
                     tau: float | None = None) -> Track:
    """A binary integrated with SciPy (DOP853) under F = G m1 m2 / r^power and an
    optional linear drag a_i = -v_i / tau."""
    m1, m2 = 10.1 * MSUN, 5.6 * MSUN
    p1, p2 = np.array([5e10, 1e11, 0.0]), np.array([7.5e10, 3e10, 0.0])
    rel = p2 - p1
    r0 = np.linalg.norm(rel)
    vc = np.sqrt(G * (m1 + m2) / r0 ** (power - 1))
    tangent = np.cross(rel, [0, 0, 1.0]) / r0
    vrel = vc * tangent + 0.5 * vc * rel / r0
    v1, v2 = -m2 / (m1 + m2) * vrel, m1 / (m1 + m2) * vrel

    def rhs(_t, y):
        d = y[3:6] - y[0:3]
        r = np.linalg.norm(d)
        a1, a2 = G * m2 * d / r ** (power + 1), -G * m1 * d / r ** (power + 1)
        if tau:
            a1, a2 = a1 - y[6:9] / tau, a2 - y[9:12] / tau
        return np.concatenate([y[6:12], a1, a2])

    sol = solve_ivp(rhs, (0, t_end), np.concatenate([p1, p2, v1, v2]), method="DOP853",
                    rtol=1e-12, atol=1e-3, dense_output=True)
    t = np.linspace(0, t_end, n_rows)
    y = sol.sol(t)
    return Track(t, y[0:3].T, y[3:6].T)


@pytest.fixture(scope="module")
def world() -> KeplerWorld:
    return KeplerWorld()


def rel_err(value: float, truth: float) -> float:
    return abs(value - truth) / abs(truth)


# ---- estimators -------------------------------------------------------------------


def test_model_fit_recovers_orbit_masses_and_drift_from_40_irregular_samples(world):
    t = gravity_planning.coarse_times((0.0, 10 * world.period), 40)
    sol = ModelSolution(world.track(t), G)
    assert sol.keplerian
    assert rel_err(sol.period(), world.period) < 1e-8
    assert abs(sol.eccentricity() - world.e) < 1e-8
    assert rel_err(sol.semi_major_axis(), world.a) < 1e-8
    assert rel_err(sol.masses[0], world.m1) < 1e-7
    assert rel_err(sol.masses[1], world.m2) < 1e-7
    assert np.allclose(sol.drift_ms, world.drift, atol=1e-4)
    energy = -G * world.m1 * world.m2 / (2 * world.a) + 0.5 * world.total * world.drift @ world.drift
    assert rel_err(answer("total_energy", sol), energy) < 1e-7


def test_model_and_numeric_solutions_agree_with_closed_form_truths(world):
    dense = NumericSolution(world.track(np.linspace(0, 5 * world.period, 40000)), G)
    model = ModelSolution(world.track(gravity_planning.coarse_times((0, 5 * world.period), 40)), G)
    h = np.sqrt(G * world.total * world.a * (1 - world.e**2))
    rp, ra = world.a * (1 - world.e), world.a * (1 + world.e)
    # Speed extremes in the frame of the data (drift included), on a fine grid of E.
    fine_t = world.t_peri + np.linspace(0, world.period, 400001)
    _, _, v1, _ = world.states(fine_t)
    speed1 = np.linalg.norm(v1, axis=1)
    truths = {
        "period": world.period, "eccentricity": world.e, "periastron": rp, "apoastron": ra,
        "specific_angular_momentum": h, "mass_star1": world.m1, "mass_star2": world.m2,
        "max_angular_velocity_star1": h / rp**2, "min_acceleration_star2": G * world.m1 / ra**2,
        "max_velocity_star1": speed1.max(), "min_momentum_star1": world.m1 * speed1.min(),
        "semi_minor_axis_star1": world.m2 / world.total * world.a * np.sqrt(1 - world.e**2),
    }
    for task, truth in truths.items():
        assert rel_err(answer(task, model), truth) < 1e-6, task
        assert rel_err(answer(task, dense), truth) < 1e-3, task
    for task in ("is_bound", "virial_theorem", "kepler_3rd_law"):
        assert answer(task, model) is True and answer(task, dense) is True, task


def test_sparse_equally_spaced_samples_find_the_closest_passage(world):
    # 100 samples over 10 periods land at a different phase on every passage: the best
    # passage pins periastron within a few percent where a typical passage misses by ~10 %.
    t = np.linspace(0, 10 * world.period, 100)
    sol = NumericSolution(world.track(t), G)
    assert rel_err(sol.periastron(), world.a * (1 - world.e)) < 0.03
    assert rel_err(sol.apoastron(), world.a * (1 + world.e)) < 0.01
    assert rel_err(answer("period", sol), world.period) < 0.01


def test_orbit_averages_and_travel_times_match_a_direct_integration(world):
    model = ModelSolution(world.track(gravity_planning.coarse_times((0, 3 * world.period), 40)), G)
    t = world.t_peri + np.linspace(0, world.period, 200001)
    r1, r2, _, _ = world.states(t)
    centre = (world.m1 * r1 + world.m2 * r2) / world.total
    inv_r2 = 1 / np.sum((r2 - r1) ** 2, axis=1)
    below = np.mean(inv_r2[:-1] < np.trapezoid(inv_r2, t) / world.period)
    assert abs(answer("time_fraction_acceleration_below_mean", model) - below) < 1e-4
    distance = np.trapezoid(np.linalg.norm(r1 - centre, axis=1), t) / world.period
    assert rel_err(answer("avg_distance_COM_star1", model), distance) < 1e-5
    path = np.concatenate([[0], np.cumsum(np.linalg.norm(np.diff(r1 - centre, axis=0), axis=1))])
    travel = np.interp(0.7 * path[-1], path, t) - world.t_peri
    assert rel_err(answer("travel_time_70pct_path", model), travel) < 1e-4


def hyperbola_states(t: np.ndarray, m1: float, m2: float, e: float,
                     a: float) -> tuple[np.ndarray, np.ndarray]:
    """Star positions on a hyperbolic encounter (periapsis at t = 2e7 s), barycentre at
    rest at the origin; H from the fixed point H = asinh((M + H) / e)."""
    total = m1 + m2
    mean = np.sqrt(G * total / a**3) * (t - 2e7)
    hyp = np.arcsinh(mean / e)
    for _ in range(300):
        hyp = np.arcsinh((mean + hyp) / e)
    rel = np.column_stack([a * (e - np.cosh(hyp)), a * np.sqrt(e**2 - 1) * np.sinh(hyp),
                           np.zeros_like(t)])
    return -m2 / total * rel, m1 / total * rel


def test_unbound_orbit_is_recognised_with_its_energy():
    m1, m2, e, a = 10.1 * MSUN, 5.6 * MSUN, 1.5, 5e11
    energy = G * m1 * m2 / (2 * a)
    t = np.linspace(0, 1e8, 400)
    dense = NumericSolution(Track(t, *hyperbola_states(t, m1, m2, e, a)), G)
    assert answer("is_bound", dense) is False
    assert rel_err(answer("total_energy", dense), energy) < 0.01
    # Sparse samples plus two tight clusters near closest approach: the clusters give
    # the mass fraction that a nearly straight track cannot.
    centres = np.array([1.9e7, 2.1e7])
    offsets = 1e3 * (np.arange(5) - 2)
    times = np.unique(np.concatenate([np.linspace(0, 1e8, 40), *(c + offsets for c in centres)]))
    track = Track(times, *hyperbola_states(times, m1, m2, e, a))
    rows = [np.flatnonzero(np.abs(times - c) <= 2.5e3) for c in centres]
    model = ModelSolution(track, G, clusters=rows)
    assert not model.orbit.bound
    assert answer("is_bound", model) is False
    assert rel_err(answer("total_energy", model), energy) < 1e-4


@pytest.fixture(scope="module")
def drag_track() -> Track:
    return integrated_track(6e7, 6000, tau=3e8)


@pytest.fixture(scope="module")
def modified_track() -> Track:
    return integrated_track(6e7, 6000, power=2.03)


def test_drag_timescale_from_the_decay_of_angular_momentum(drag_track):
    sol = NumericSolution(drag_track, G)
    assert rel_err(answer("linear_drag", sol), 3e8) < 1e-3
    assert answer("virial_theorem", sol) is False
    # A few tight clusters spread over the window are enough for the model solution.
    idx = np.linspace(10, len(drag_track) - 11, 6).astype(int)
    rows = [np.arange(i - 2, i + 3) for i in idx]
    keep = np.unique(np.concatenate([np.arange(0, len(drag_track), 150), *rows]))
    sub = Track(drag_track.time_s[keep], drag_track.star1_m[keep], drag_track.star2_m[keep])
    rows = [np.searchsorted(sub.time_s, drag_track.time_s[r]) for r in rows]
    model = ModelSolution(sub, G, clusters=rows)
    assert rel_err(answer("linear_drag", model), 3e8) < 0.01
    assert answer("virial_theorem", model) is False


def test_force_law_exponent_from_accelerations(modified_track):
    sol = NumericSolution(modified_track, G)
    assert abs(answer("modified_gravity_power_law", sol) - 0.03) < 0.003
    assert answer("kepler_3rd_law", sol) is False
    newtonian = NumericSolution(integrated_track(6e7, 6000), G)
    assert abs(answer("modified_gravity_power_law", newtonian)) < 1e-3
    assert answer("kepler_3rd_law", newtonian) is True


def test_display_units_are_converted_to_si(world):
    t = np.linspace(0, 3 * world.period, 3000)
    si = track_from_table(world.table(t), {"time_to_s": 1.0, "length_to_m": 1.0})
    shown = world.table(t, time_to_s=YEAR, length_to_m=AU)
    converted = track_from_table(shown, {"time_to_s": YEAR, "length_to_m": AU})
    assert np.allclose(converted.time_s, si.time_s, rtol=1e-12)
    assert np.allclose(converted.star2_m, si.star2_m, rtol=1e-12)
    # Repeated and unsorted rows (observations come in call order) are merged.
    messy = pd.concat([shown.iloc[::-1], shown.iloc[:5]], ignore_index=True)
    assert len(track_from_table(messy, {"time_to_s": YEAR, "length_to_m": AU})) == len(t)
    cgs = world.table(t, length_to_m=0.01)
    sol = NumericSolution(track_from_table(cgs, {"time_to_s": 1.0, "length_to_m": 0.01}), G)
    assert rel_err(answer("mass_star1", sol), world.m1) < 1e-3


def test_every_task_of_the_spec_has_an_estimator():
    spec_tasks = {
        "roche_lobe_radius", "modified_gravity_power_law", "linear_drag",
        "time_fraction_acceleration_below_mean", "apoastron", "area_swept_over_time_apo",
        "area_swept_over_time_peri", "eccentricity", "kepler_3rd_law", "mass_largest_star",
        "multiply_mass_period", "periastron", "period", "reduced_mass", "semi_major_axis",
        "semi_minor_axis", "specific_angular_momentum", "total_energy", "total_mass",
        "mass_ratio", "virial_theorem", "travel_time_20pct_path", "travel_time_70pct_path",
        "is_bound"}
    for star in (1, 2):
        spec_tasks |= {f"{q}_star{star}" for q in (
            "avg_distance_COM", "max_acceleration", "max_angular_velocity", "max_momentum",
            "max_velocity", "min_acceleration", "min_angular_velocity", "min_momentum",
            "min_velocity", "orbital_area", "semi_major_axis", "semi_minor_axis", "mass")}
    assert len(spec_tasks) == 50
    assert spec_tasks == set(gravity_answers.TASKS)


# ---- agents through a fake view ----------------------------------------------------


class Result:
    def __init__(self, text, data=None, is_error=False):
        self.text, self.data, self.is_error = text, data, is_error


class FakeView:
    """The agent-facing interface (prompt, tools, call, workspace, done) over a
    synthetic world, in yr/AU display units, recording every call."""

    __slots__ = ("_world", "_task", "_total", "_rows", "_calls", "_answer", "_end", "prompt")

    def __init__(self, world: KeplerWorld, task: str, protocol: str, boolean=False):
        self._world = world
        self._task = {"id": task, "answer_type": "boolean" if boolean else "number",
                      "answer_unit": ""}
        self._total = None if protocol == "full-obs" else int(protocol.rsplit("-", 1)[1])
        self._rows = pd.DataFrame(columns=COLUMNS, dtype=float)
        self._calls: list[tuple[str, dict]] = []
        self._answer = None
        self._end = 10 * world.period / YEAR
        self.prompt = f"Find {task}. Answer in SI."

    def tools(self):
        names = ["submit"] + ([] if self._total is None else ["observe"])
        return [{"type": "function", "function": {"name": n}} for n in names]

    def workspace(self):
        units = {"time": "yr", "length": "AU", "time_to_s": YEAR, "length_to_m": AU}
        ws = {"task": dict(self._task), "units": units, "window": [0.0, self._end], "G_SI": G}
        if self._total is None:
            ws["df"] = self._world.table(np.linspace(0, self._end * YEAR, 30000), YEAR, AU)
        else:
            used = len(self._rows)
            ws["observations"] = self._rows.copy()
            ws["budget"] = {"total": self._total, "per_call": 10, "used": used,
                            "remaining": self._total - used}
        return ws

    @property
    def done(self):
        return self._answer is not None

    def call(self, name, args=None):
        self._calls.append((name, dict(args or {})))
        if name == "observe" and self._total is not None:
            times = np.asarray(args["times"], dtype=float)
            if not 1 <= len(times) <= 10 or len(self._rows) + len(times) > self._total or \
                    times.min() < 0 or times.max() > self._end:
                return Result("refused", is_error=True)
            new = self._world.table(times * YEAR, YEAR, AU)
            self._rows = new if self._rows.empty else pd.concat([self._rows, new],
                                                                ignore_index=True)
            return Result("ok", {"rows": new.to_numpy().tolist()})
        if name == "submit" and self._answer is None:
            self._answer = args["answer"]
            return Result("submitted")
        return Result("no such tool", is_error=True)


@pytest.mark.parametrize("agent,protocol,task", [
    (gravity.ExpertFull, "full-obs", "eccentricity"),
    (gravity.ExpertUniform, "budget-obs-100", "period"),
    (gravity.ExpertAdaptive, "budget-obs-100", "mass_star2"),
    (gravity.ExpertAdaptive, "budget-obs-100", "max_velocity_star1"),
])
def test_agents_play_through_the_view_and_answer_in_si(world, agent, protocol, task):
    view = FakeView(world, task, protocol)
    agent().solve(view)
    truths = {"eccentricity": world.e, "period": world.period, "mass_star2": world.m2,
              "max_velocity_star1": None}
    truth = truths[task]
    if truth is None:
        _, _, v1, _ = world.states(world.t_peri + np.linspace(0, world.period, 200001))
        truth = np.linalg.norm(v1, axis=1).max()
    assert view.done and isinstance(view._answer, float)
    assert rel_err(view._answer, truth) < 0.05
    submits = [c for c in view._calls if c[0] == "submit"]
    observes = [c for c in view._calls if c[0] == "observe"]
    assert len(submits) == 1
    assert all(1 <= len(c[1]["times"]) <= 10 for c in observes)
    used = sum(len(c[1]["times"]) for c in observes)
    if protocol == "full-obs":
        assert used == 0
    elif agent is gravity.ExpertUniform:
        assert used == 100
    else:
        assert used <= 100


def test_adaptive_agent_submits_booleans_and_respects_small_budgets(world):
    view = FakeView(world, "virial_theorem", "budget-obs-100", boolean=True)
    gravity.ExpertAdaptive().solve(view)
    assert view._answer is True
    view = FakeView(world, "period", "budget-obs-30")
    gravity.ExpertAdaptive().solve(view)
    assert rel_err(view._answer, world.period) < 1e-6
    assert sum(len(c[1]["times"]) for c in view._calls if c[0] == "observe") <= 30


def test_baselines_import_nothing_of_the_suite_but_each_other_and_core():
    """The experts see what any agent sees: no import of the suite's worlds or truths,
    only each other, core and the shared physics (Kepler's equation, no state)."""
    package = Path(gravity.__file__).parent
    names = sorted(path.name for path in package.glob("*.py"))
    assert {"expert.py", "measurements.py", "numeric.py", "kepler_model.py"} <= set(names)
    for name in names:
        tree = ast.parse((package / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                allowed = node.level == 1 or (node.level == 4 and node.module in (
                    "core", "core.conversation", "physics", "physics.kepler"))
                assert allowed, (name, "." * node.level + (node.module or ""))
            elif isinstance(node, ast.ImportFrom | ast.Import):
                module = node.module if isinstance(node, ast.ImportFrom) else ""
                names_ = [module] + [alias.name for alias in node.names]
                assert not any("discoverygym" in n for n in names_ if n), name


def test_agents_table_names_the_three_experts():
    from discoverygym.suites.gravity.baselines import AGENTS

    experts = {name: path for name, path in AGENTS.items() if ".expert:" in path}
    assert set(experts) == {"expert-full", "expert-uniform", "expert-adaptive"}
    for path in AGENTS.values():
        module, cls = path.split(":")
        assert hasattr(importlib.import_module(module), cls)


# ---- the real suite ------------------------------------------------------------------

suite_available = importlib.util.find_spec("discoverygym.suites.gravity") is not None


@pytest.mark.skipif(not suite_available, reason="gravity suite not installed")
@pytest.mark.parametrize("agent,protocol,pairs", [
    ("expert-full", "full-obs", [("period", "A"), ("eccentricity", "PM1"),
                                 ("mass_star1", "A"), ("mass_star1", "PM1")]),
    ("expert-adaptive", "budget-obs-100", [("period", "A"), ("eccentricity", "PM1"),
                                           ("mass_star1", "PM1"), ("max_velocity_star1", "PM1"),
                                           ("linear_drag", "DRAG2-PM"), ("is_bound", "UNB"),
                                           ("modified_gravity_power_law", "MG197-PM"),
                                           ("kepler_3rd_law", "MG203")]),
    ("expert-uniform", "budget-obs-100", [("period", "A"), ("mass_star1", "A")]),
    # A small budget still leaves room for the observation clusters.
    ("expert-adaptive", "budget-obs-30", [("linear_drag", "DRAG2"),
                                          ("modified_gravity_power_law", "MG203")]),
])
def test_experts_on_the_real_suite(agent, protocol, pairs):
    from discoverygym.core import get_suite, make_agent

    suite = get_suite("gravity")
    for task_id, world_id in pairs:
        episode = suite.episode(task_id, seed=0, world=world_id, protocol=protocol)
        make_agent("gravity", agent).solve(episode.view())
        record = episode.record(agent=agent)
        assert record.passed, (agent, task_id, world_id, record.value, record.error)
        if protocol.startswith("budget"):
            budget = int(protocol.rsplit("-", 1)[1])
            assert record.usage.observations <= budget
            if agent == "expert-uniform":
                assert record.usage.observations == budget


@pytest.mark.parametrize("count", [1, 2, 7, 100, 101, 10012])
def test_the_periodograms_split_grid_sums_the_phasors_directly(count):
    """The Keplerian baseline's periodogram splits its frequency grid into blocks (a few
    exponentials and one matrix product); it must give the sums of the definition,
    sum_j w_j exp(-i n_k t_j) on n_k = n_min + k step, to rounding."""
    from discoverygym.suites.gravity.baselines import kepler_model

    rng = np.random.default_rng(count)
    span = 3.0e7
    t = np.sort(rng.uniform(0.0, span, 300))
    weights = np.exp(1j * rng.uniform(0.0, 2 * np.pi, 300))
    n_min, step = 2 * np.pi / (3 * span), 0.05 / span
    grid = n_min + step * np.arange(count)
    direct = (weights[None, :] * np.exp(-1j * grid[:, None] * t[None, :])).sum(axis=1)
    split = kepler_model._phasor_sums(weights, t, n_min, step, count)
    assert split.shape == (count,)
    # each term's phase n t reaches 500 rad: an exponential is good to 500 * 1e-16
    assert np.max(np.abs(split - direct)) < 300 * 500 * 4e-16
