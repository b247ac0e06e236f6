"""Scripted baselines of the mad suite's fluid and quantum worlds. They use only the
episode view (the prompt's facts in `world_facts`, the tools, what their own
measurements return) and public physics code (the standard Navier-Stokes solver); none
of them reads the truth or the hidden law.

Fluid (under the default `discovery` protocol neither measures: the question is a
fresh preparation, stated exactly, and no measurement of this world tells them about
it; `persistence` holds the preparation's initial vorticity at the query points,
`navier-stokes` integrates it with the standard equations on the world's grid.
Under `--protocol paper`:)
- `persistence`: measure every query point once at T_max (the best fidelity the budget
  pays for) and predict those values at every query time.
- `navier-stokes`: assume the standard equations. The initial double shear layer has two
  unknowns: at t = 0, omega(0, pi/2) = A - 1/delta and omega(pi, pi/2) = -A - 1/delta, so
  two high-fidelity point measurements give delta and A. Integrate the standard
  Navier-Stokes equations from that state (same grid as the world, stated in the
  prompt) and read the query points. The query points are also measured at T_max: if
  the simulation misses them by more than 20% (the law is not the standard one), fall
  back to persistence.

Quantum:
- `uniform`: no measurement; the probability of a region is its area over the domain's.
- `empirical`: in each of the measurement runs, measure particle 1 and then particle 2
  at T_max (a joint sample of the undisturbed state; later measurements would see the
  collapsed state); the probability of a region is the fraction of samples inside it,
  shrunk towards the particle being spread evenly over the well (a prior of weight
  PRIOR_SAMPLES samples). Five samples per particle, taken up to 10 time units before
  the query times, say little about the density then (measured on seeds 0-9: weighting
  them more makes the error worse), so the prior dominates: this agent mostly knows
  that the particles stay inside the well.
- `schrodinger`: standard quantum mechanics from the prepared state the prompt states
  (the default `initial_state=given`): each packet evolved exactly with the stated
  Hamiltonian, Born-rule (p = 2) region probabilities of the product state. Exact under
  the normal law; the altered laws are what it cannot know.

Each baseline plays every trial of the in-context-learning variant the same way, and
refuses a world it was not built for with a clear message. They are registered with
the classical ones in `baselines/classical.py` (`discoverygym run mad --world ... --agent NAME`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....core import AgentNotApplicable, EpisodeView

FIDELITY_COST = {"high": 10.0, "medium": 5.0, "low": 2.0}
FLUID_MISMATCH_LIMIT = 0.2  # relative L2 miss at T_max above which the NS model is dropped
PRIOR_SAMPLES = 45.0  # weight of the even-over-the-well prior, in samples (see below)
WALL_INSET = 0.2  # the smoothed wall of height 1000 keeps the density this far inside


# World -> the baselines that play it, for the message when an agent meets another world.
WORLD_AGENTS = {"classical": ("last-seen", "ballistic", "newtonian"),
                "fluid": ("persistence", "navier-stokes"),
                "quantum": ("uniform", "empirical", "schrodinger")}


def require_world(view: EpisodeView, world: str) -> None:
    """Stop with a clear message when a baseline meets a world it was not built for."""
    actual = view.workspace()["world_facts"].get("world")
    if actual != world:
        raise AgentNotApplicable(
            f"this baseline plays the {world} world, but the episode is in the {actual} "
            f"world; baselines for it: {', '.join(WORLD_AGENTS.get(actual, ())) or 'none'}")


def oracle_view(episode: Any, world: str) -> tuple[EpisodeView, dict[str, Any]]:
    """The view and workspace a law-oracle plays through: an episode of `world` in the
    predict variant (one trial, answered with predict); refused otherwise."""
    view = episode.view()
    require_world(view, world)
    ws = view.workspace()
    if "parameter" in ws or ws["n_trials"] > 1:
        raise RuntimeError("law-oracle calibrates the predict variant only (one trial, "
                           "answered with predict)")
    return view, ws


class TrialBaseline:
    """A baseline of one world that plays every trial of an episode (one in the plain
    protocol, K in the in-context-learning variant) the same way with `play_trial`."""

    world = ""

    def solve(self, view: EpisodeView) -> None:
        require_world(view, self.world)
        while not view.done:
            trial = view.workspace()["trial"]
            self.play_trial(view)
            if not view.done and view.workspace()["trial"] == trial:
                raise RuntimeError("the prediction was refused; see the episode's tool log")

    def play_trial(self, view: EpisodeView) -> None:
        raise NotImplementedError


def _best_fidelity(budget: float, n_items: int) -> str:
    for fidelity in ("high", "medium", "low"):
        if FIDELITY_COST[fidelity] * n_items <= budget + 1e-9:
            return fidelity
    raise RuntimeError(f"the budget {budget:g} cannot pay for {n_items} items")


def _measure(view: EpisodeView, t: float, what: Any, fidelity: str) -> np.ndarray:
    result = view.call("measure", {"t": float(t), "what": what, "fidelity": fidelity})
    if result.is_error:
        raise RuntimeError(result.text)
    return np.asarray(result.data["values"], dtype=float)


def _queries(view: EpisodeView) -> list[dict[str, Any]]:
    if view.workspace()["phase"] == "measure":
        result = view.call("end_measurements", {})
        if result.is_error:
            raise RuntimeError(result.text)
    return list(view.workspace()["queries"])


# ---- fluid ------------------------------------------------------------------------------
def asks_preparation(view: EpisodeView) -> bool:
    """The fluid world's discovery protocol: the question is a fresh preparation."""
    return view.workspace()["world_facts"].get("protocol") == "discovery"


def preparation_hat(facts: dict[str, Any], preparation: dict[str, float]) -> np.ndarray:
    """The dealiased real-FFT vorticity of a stated preparation on the world's grid (the
    state the world's integrator starts it from)."""
    from ....physics import fluid_solver as fs

    omega0 = fs.double_shear_layer(int(facts["resolution"]), float(preparation["thickness"]),
                                   float(preparation["amplitude"]), float(preparation["phase"]))
    return fs.initial_hat(omega0)


def standard_forecast(facts: dict[str, Any], preparation: dict[str, float],
                      times: list[float]) -> np.ndarray:
    """The preparation under the standard Navier-Stokes equations at `times`, read at
    the query points (the public solver on the stated grid)."""
    from ....physics import fluid_solver as fs

    points = np.asarray(facts["query_points"], dtype=float)
    solution = fs.simulate_from(preparation_hat(facts, preparation), 0.0, times,
                                nu=float(facts["viscosity"]))
    return np.stack([fs.evaluate_at_points(w, points[:, 0], points[:, 1])
                     for w in solution.omega_hat])


class FluidPersistence(TrialBaseline):
    """The last measured vorticity at each query point, for every query time (discovery:
    the preparation's initial vorticity there)."""

    world = "fluid"

    def play_trial(self, view: EpisodeView) -> None:
        from ....physics import fluid_solver as fs

        ws = view.workspace()
        facts = ws["world_facts"]
        if asks_preparation(view):
            queries = _queries(view)
            points = np.asarray(facts["query_points"], dtype=float)
            initial = fs.evaluate_at_points(
                preparation_hat(facts, view.workspace()["preparation"]), points[:, 0],
                points[:, 1])
            view.call("predict", {"predictions": [initial.tolist()] * len(queries)})
            return
        points = facts["query_points"]
        fidelity = _best_fidelity(ws["budget_remaining"], len(points))
        values = _measure(view, facts["t_max"], points, fidelity)
        queries = _queries(view)
        view.call("predict", {"predictions": [values.tolist()] * len(queries)})


def fit_shear_layer(omega_left: float, omega_right: float, resolution: int,
                    thickness_range: tuple[float, float]) -> tuple[float, float]:
    """(delta, A) from the vorticity at (0, pi/2) and (pi, pi/2) at t = 0, for the
    dealiased field on the simulator's grid: A = (left - right) / 2 exactly (the cos x
    mode is resolved); delta solves profile(delta) = (left + right) / 2, where profile
    is the grid's band-limited value of the shear term at (., pi/2), by a bounded 1D
    search (the plain -1/delta is biased on coarse grids)."""
    from scipy.optimize import minimize_scalar

    from ....physics import fluid_solver as fs

    amplitude = 0.5 * (omega_left - omega_right)
    target = 0.5 * (omega_left + omega_right)
    mask = fs.SpectralGrid(resolution).dealias_mask()

    def profile(delta: float) -> float:
        field_hat = np.where(mask, np.fft.rfft2(fs.double_shear_layer(resolution, delta, 0.0)),
                             0.0)
        return float(fs.evaluate_at_points(field_hat, np.array([0.0]),
                                           np.array([0.5 * math.pi]))[0])

    lo, hi = 0.5 * thickness_range[0], 2.0 * thickness_range[1]
    grid = np.geomspace(lo, hi, 40)
    misses = [abs(profile(d) - target) for d in grid]
    k = int(np.argmin(misses))
    bracket = (grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)])
    best = minimize_scalar(lambda d: (profile(d) - target) ** 2, bounds=bracket,
                           method="bounded", options={"xatol": 1e-10})
    return float(best.x), amplitude


class FluidNavierStokes(TrialBaseline):
    """Fit the initial shear layer, integrate the standard equations forward."""

    world = "fluid"

    def play_trial(self, view: EpisodeView) -> None:
        from ....physics import fluid_solver as fs

        ws = view.workspace()
        facts = ws["world_facts"]
        if asks_preparation(view):
            queries = _queries(view)
            predictions = standard_forecast(facts, view.workspace()["preparation"],
                                            [float(q["t"]) for q in queries])
            view.call("predict", {"predictions": predictions.tolist()})
            return
        t_max = float(facts["t_max"])
        points = np.asarray(facts["query_points"], dtype=float)
        initial = _measure(view, 0.0, [[0.0, 0.5 * math.pi], [math.pi, 0.5 * math.pi]], "high")
        n = int(facts["resolution"])
        delta, amplitude = fit_shear_layer(float(initial[0]), float(initial[1]), n,
                                           tuple(facts["thickness_range"]))
        fidelity = _best_fidelity(view.workspace()["budget_remaining"], len(points))
        measured = _measure(view, t_max, points.tolist(), fidelity)
        queries = _queries(view)
        times = [t_max] + [float(q["t"]) for q in queries]
        omega0 = fs.double_shear_layer(n, delta, amplitude)
        solution = fs.simulate(omega0, times, nu=float(facts["viscosity"]))
        simulated = np.stack([fs.evaluate_at_points(w, points[:, 0], points[:, 1])
                              for w in solution.omega_hat])
        miss = np.linalg.norm(simulated[0] - measured) / max(np.linalg.norm(measured), 1e-12)
        if miss <= FLUID_MISMATCH_LIMIT:
            predictions = simulated[1:]
        else:  # not the standard law: the model cannot be trusted; hold the last values
            predictions = np.stack([measured] * len(queries))
        view.call("predict", {"predictions": predictions.tolist()})


# ---- quantum ----------------------------------------------------------------------------
def _area_inside(region: list[float], half_x: float, half_y: float) -> float:
    x0, x1, y0, y1 = (float(v) for v in region)
    width = max(0.0, min(x1, half_x) - max(x0, -half_x))
    height = max(0.0, min(y1, half_y) - max(y0, -half_y))
    return width * height


class QuantumUniform(TrialBaseline):
    """Region area / domain area, without measuring."""

    world = "quantum"

    def play_trial(self, view: EpisodeView) -> None:
        facts = view.workspace()["world_facts"]
        lo, hi = facts["domain"]
        half = 0.5 * (hi - lo)
        queries = _queries(view)
        view.call("predict", {"predictions": [
            _area_inside(q["region"], half, half) / (hi - lo) ** 2 for q in queries]})


class QuantumEmpirical(TrialBaseline):
    """Measured frequencies across runs, shrunk towards an even spread over the well."""

    world = "quantum"

    def play_trial(self, view: EpisodeView) -> None:
        ws = view.workspace()
        facts = ws["world_facts"]
        t_max = float(facts["t_max"])
        samples: dict[int, list[np.ndarray]] = {1: [], 2: []}
        for run in range(int(facts["measurement_runs"])):
            if run > 0:
                result = view.call("restart_measurements", {})
                if result.is_error:
                    raise RuntimeError(result.text)
            for particle in (1, 2):
                samples[particle].append(_measure(view, t_max, particle, "low"))
        queries = _queries(view)
        well_x, well_y = (0.5 * float(s) - WALL_INSET for s in facts["well_size"])
        predictions = []
        for q in queries:
            x0, x1, y0, y1 = q["region"]
            points = np.array(samples[int(q["particle"])])
            inside = np.sum((points[:, 0] >= x0) & (points[:, 0] <= x1)
                            & (points[:, 1] >= y0) & (points[:, 1] <= y1))
            prior = _area_inside(q["region"], well_x, well_y) / (4 * well_x * well_y)
            predictions.append(float((inside + PRIOR_SAMPLES * prior)
                                     / (len(points) + PRIOR_SAMPLES)))
        view.call("predict", {"predictions": predictions})


class QuantumSchrodinger(TrialBaseline):
    """Standard quantum mechanics from the prepared state the prompt states: evolve each
    packet exactly on the stated grid (the public solver: eigenvectors of the stated
    one-particle Hamiltonian) and answer the Born-rule (p = 2) probability of the region
    for the product state. Measures nothing; an altered Born rule or an entangled
    initial state is what it cannot know."""

    world = "quantum"

    def play_trial(self, view: EpisodeView) -> None:
        from .. import quantum_solver as qs
        from ..quantum_world import cached_eigensystem  # public H, no truth

        facts = view.workspace()["world_facts"]
        state = facts.get("initial_state")
        if state is None:
            raise RuntimeError("schrodinger needs the prepared state, which this episode "
                               "hides (initial_state=hidden)")
        grid = qs.QuantumGrid(int(facts["grid"]), float(facts["domain"][1] - facts["domain"][0]))
        packets = []
        for k in range(2):
            system = cached_eigensystem(float(state["masses"][k]))
            psi = qs.gaussian_packet(grid, state["centres"][k], float(state["widths"][k]),
                                     state["momenta"][k])
            packets.append((system, system.vectors.T @ psi))
        predictions = []
        for q in _queries(view):
            system, coefficients = packets[int(q["particle"]) - 1]
            psi_t = system.vectors @ (np.exp(-1j * system.energies * float(q["t"]))
                                      * coefficients)
            density = psi_t.real**2 + psi_t.imag**2
            predictions.append(float(density @ grid.region_weights(*q["region"])))
        view.call("predict", {"predictions": predictions})


