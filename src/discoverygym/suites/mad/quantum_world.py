"""The quantum world: two non-interacting particles in 2D, each in a smoothed 8 x 9 box
well inside the 10 x 10 domain (32 x 32 cells per particle, hbar = 1), under the
standard Born rule or a generalised one (density |Psi|^p), with an optional
entanglement factor exp(-lambda |r1 - r2|^2) in the initial state. Implements the
`World` interface on top of `quantum_solver`.

Evolution is exact: each one-particle Hamiltonian is diagonalised once per mass (cached
in memory and on disk under `cache_dir("mad", "quantum")`), and the joint state at any
time is two matrix products. A measurement samples the observed particle's cell from
its marginal density, reports a uniform point in that cell, and collapses the joint
state onto the cell; `start_trial` (each measurement run) restores the initial state.
The questions are about the undisturbed world: the truth at a query time is the
initial state evolved without measurements."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from ...core import RunOption, ToolInputError
from ...core.array_cache import ArrayCache, digest
from . import quantum_solver as qs
from . import streams
from .law_rollout import LAW_SCORE_STREAM, HeldOut
from .worlds import (
    QUERY_HORIZON_OPTION,
    T_MAX_OPTION,
    LawFunction,
    Observation,
    World,
    WorldDefaults,
    WorldInfo,
)

CACHE_FORMAT = 1  # bump when the Hamiltonian changes

T_MAX = 30.0  # paper
BUDGET = 30.0  # paper: per measurement run
MEASUREMENT_RUNS = 5  # paper: 5 trials on the same initial state
N_QUERIES = 5  # paper
QUERY_HORIZON = 10.0  # ours: query times are T_max + U(0, 10], sorted
MASS_RANGES = ((0.0, 1.0), (0.0, 5.0))  # paper: m1 ~ U(0, 1), m2 ~ U(0, 5)
MASS_FLOOR = 0.1  # ours: masses below are raised to 0.1 (a lighter particle's spectrum
#                   reaches ~4000 and its packet fills the well within a fraction of a unit)
MEAN_RANGES = ((0.0, 4.0), (0.0, 1.0))  # paper: packet means U(0, 4) and U(0, 1) per axis
WIDTH_RANGE = (0.0, 1.0)  # paper: packet widths U(0, 1)
WIDTH_FLOOR = 0.35  # ours: at least about one cell (h = 0.3125)
VELOCITY_RANGES = ((0.0, 2.0), (0.0, 3.0))  # paper: velocities U(0, 2) and U(0, 3) per axis
# ours: |p| per axis at most half the grid's Nyquist wave number pi / h, so that the
# packet is resolved on 32 cells (p = m v is clipped; this binds for heavy particle 2)
MOMENTUM_CAP = 0.5 * math.pi / qs.QuantumGrid().spacing
# The law score (law_rollout.py), ours: held-out packet pairs (the world's masses, fresh
# centres, widths and momenta), read out at these fractions of T_max.
LAW_SCORE_STATES = 2
LAW_SCORE_TIME_FRACTIONS = (0.0, 0.5, 7.0 / 6.0)
WALL_MARGIN = 1.0  # ours: packet means stay at least one width inside the well
# ours: whether the prompt states the prepared one-particle packets (masses, centres,
# widths, momenta). "given" (default): the experimenter knows what was prepared and the
# task is to find out which rules of outcome statistics or correlation differ; "hidden":
# everything must come from single-shot samples, which cannot pin down a wave function
# (see the README: then even the exact time-averaged density barely beats `uniform`).
INITIAL_STATE_MODES = ("given", "hidden")
# Scoring protocols (ours), default first. "discovery": an altered law is scored against
# the normal-physics forecast and the normal law against the nearest altered law's
# forecast, so passing needs the law (README, Calibration); "paper": against uniform.
PROTOCOLS = ("discovery", "paper")

LAWS: dict[str, tuple[float, float]] = {  # law -> (Born power p, entanglement lambda)
    "normal": (2.0, 0.0),
    "p1": (1.0, 0.0),
    "p3": (3.0, 0.0),
    "lambda5": (2.0, 5.0),
    "lambda15": (2.0, 15.0),
    "combined": (1.0, 25.0),  # paper: p = 1 with lambda = 25
}


@dataclass(frozen=True)
class Packets:
    """The initial one-particle packets drawn from the seed (independent of the law)."""

    masses: tuple[float, float]
    means: tuple[tuple[float, float], tuple[float, float]]
    widths: tuple[float, float]
    momenta: tuple[tuple[float, float], tuple[float, float]]


def sample_packets(seed: int) -> Packets:
    """Masses, means, widths and momenta of the two packets, with the floors above."""
    return draw_packets(np.random.default_rng([int(seed), streams.MAD_WORLD_INIT]))


def draw_packets(rng: np.random.Generator, masses_given: tuple[float, float] | None = None
                 ) -> Packets:
    """`sample_packets` from a given generator; `masses_given` replaces the drawn masses
    (the law score's held-out packets keep the world's particles, whose Hamiltonians
    are diagonalised already)."""
    masses, means, widths, momenta = [], [], [], []
    half_well = np.array(qs.WELL_SIZE) / 2
    for k in range(2):
        mass = max(float(rng.uniform(*MASS_RANGES[k])), MASS_FLOOR)
        if masses_given is not None:
            mass = float(masses_given[k])
        width = max(float(rng.uniform(*WIDTH_RANGE)), WIDTH_FLOOR)
        mean = rng.uniform(*MEAN_RANGES[k], size=2)
        mean = np.minimum(mean, half_well - WALL_MARGIN * width)
        velocity = rng.uniform(*VELOCITY_RANGES[k], size=2)
        momentum = np.clip(mass * velocity, -MOMENTUM_CAP, MOMENTUM_CAP)
        masses.append(mass)
        widths.append(width)
        means.append((float(mean[0]), float(mean[1])))
        momenta.append((float(momentum[0]), float(momentum[1])))
    return Packets(tuple(masses), tuple(means), tuple(widths), tuple(momenta))  # type: ignore[arg-type]


@lru_cache(maxsize=16)
def cached_eigensystem(mass: float) -> qs.Eigensystem:
    """The one-particle eigensystem of `mass` on the world's grid, from memory, disk, or
    numpy.linalg.eigh."""
    config = {"format": CACHE_FORMAT, "mass": mass, "n": qs.GRID_SIZE, "size": qs.DOMAIN_SIZE,
              "well": list(qs.WELL_SIZE), "height": qs.WELL_HEIGHT,
              "edge": qs.WELL_EDGE_WIDTH}
    return _EIGEN_CACHE.get(
        digest(config), "eigensystem",
        lambda: _eigen_arrays(qs.eigensystem(mass)),
        lambda arrays: qs.Eigensystem(arrays["energies"], arrays["vectors"]))


_EIGEN_CACHE = ArrayCache("mad", "quantum", memory_items=16)


def _eigen_arrays(system: qs.Eigensystem) -> dict[str, np.ndarray]:
    return {"energies": system.energies, "vectors": system.vectors}


def l2_error(predictions: np.ndarray, truth: np.ndarray) -> float:
    """Euclidean norm of the probability errors over all queries."""
    return float(np.linalg.norm(np.asarray(predictions, dtype=float) - np.asarray(truth)))


class QuantumWorld(World):
    """Two particles in a box well; measure positions (which collapses the state),
    predict region probabilities at later times."""

    name = "quantum"
    laws = tuple(LAWS)
    defaults = WorldDefaults(t_max=T_MAX, budget=BUDGET, n_queries=N_QUERIES,
                             measurement_trials=MEASUREMENT_RUNS)
    observation_schema: ClassVar[dict[str, Any]] = {
        "type": "integer", "enum": [1, 2],
        "description": "which particle's position to measure: 1 or 2",
    }
    observation_prose = ("`what` is the particle to observe, 1 or 2; the result is its "
                         "position [x, y]; the measurement collapses the two-particle state "
                         "(later measurements in the same run see the collapsed state); one "
                         "item")
    prediction_item_schema: ClassVar[dict[str, Any]] = {
        "type": "number", "minimum": 0.0, "maximum": 1.0,
        "description": "probability that the query's particle is in the query's region",
    }
    prediction_prose = ("one probability per query (in query order): that the query's "
                        "particle is inside its region [x_min, x_max, y_min, y_max] at its time "
                        "t, for the undisturbed world (no measurement made)")
    metric = "l2"
    protocols = PROTOCOLS
    metric_prose = "the Euclidean norm of the probability errors over the queries"
    run_options: ClassVar[tuple[RunOption, ...]] = (
        T_MAX_OPTION,
        QUERY_HORIZON_OPTION,
        RunOption("initial_state", "quantum: given (default; the prepared packets and masses "
                  "are stated) | hidden", str),
    )

    def __init__(self, *, seed: int, law: str, t_max: float = T_MAX,
                 query_horizon: float = QUERY_HORIZON, initial_state: str = "given",
                 protocol: str = PROTOCOLS[0]) -> None:
        super().__init__(seed=seed, law=law)
        if protocol not in self.protocols:
            raise ValueError(f"unknown protocol {protocol!r}; protocols: "
                             f"{', '.join(self.protocols)}")
        self.protocol = protocol
        if not t_max > 0 or not query_horizon > 0:
            raise ValueError("t_max and query_horizon must be positive")
        if initial_state not in INITIAL_STATE_MODES:
            raise ValueError(f"initial_state must be one of {', '.join(INITIAL_STATE_MODES)}, "
                             f"got {initial_state!r}")
        self.initial_state_mode = initial_state
        self.defaults = WorldDefaults(t_max=float(t_max), budget=BUDGET, n_queries=N_QUERIES,
                                      measurement_trials=MEASUREMENT_RUNS)
        self.query_horizon = float(query_horizon)
        self.born_power, self.coupling = LAWS[law]
        self.packets = sample_packets(seed)
        self.grid = qs.QuantumGrid()
        self._initial: qs.Propagator | None = None
        self._current: qs.ProductPropagator | None = None
        self._truth: dict[int, np.ndarray] = {}
        self._undisturbed: dict[float, np.ndarray] = {}

    # ---- state -------------------------------------------------------------------------
    def initial_state(self) -> np.ndarray:
        """Psi(r1, r2, t = 0) (n^2 x n^2)."""
        p = self.packets
        psi1 = qs.gaussian_packet(self.grid, p.means[0], p.widths[0], p.momenta[0])
        psi2 = qs.gaussian_packet(self.grid, p.means[1], p.widths[1], p.momenta[1])
        return qs.entangled_state(psi1, psi2, self.grid, self.coupling)

    def propagator(self) -> qs.Propagator:
        """The exact propagator of the undisturbed world."""
        if self._initial is None:
            first = cached_eigensystem(self.packets.masses[0])
            second = cached_eigensystem(self.packets.masses[1])
            self._initial = qs.Propagator.from_state(first, second, self.initial_state())
        return self._initial

    def undisturbed_state(self, t: float) -> np.ndarray:
        """Psi at time t without any measurement (memoised: every run starts from it)."""
        key = float(t)
        if key not in self._undisturbed:
            if len(self._undisturbed) > 32:
                self._undisturbed.clear()
            self._undisturbed[key] = self.propagator().state(key)
        return self._undisturbed[key]

    def start_trial(self, index: int) -> None:
        self._current = None  # back to the undisturbed initial state

    # ---- measurement -------------------------------------------------------------------
    def parse_what(self, what: Any) -> Observation:
        if isinstance(what, bool) or not isinstance(what, int | float) or what not in (1, 2):
            raise ToolInputError("`what` must be the particle to measure: 1 or 2. Nothing was "
                                 "charged.")
        particle = int(what)
        return Observation(particle, 1, f"particle {particle}")

    def true_values(self, t: float, observation: Observation, rng: np.random.Generator
                    ) -> np.ndarray:
        psi = self._current.state(t) if self._current is not None else self.undisturbed_state(t)
        particle = int(observation.selection)
        cell = qs.sample_cell(psi, particle, rng, self.born_power)
        # A collapsed state is a product (cell x the other's conditional state), so the
        # rest of the run evolves the two factors on their own.
        left, right = qs.collapse_to_product(psi, particle, cell)
        initial = self.propagator()
        self._current = qs.ProductPropagator(initial.first, initial.second, left, right, t)
        # the reported position is uniform within the cell (the density is taken constant
        # over a cell, as for region probabilities)
        x, y = self.grid.cell_centres()
        h = self.grid.spacing
        return np.array([x[cell], y[cell]]) + rng.uniform(-0.5 * h, 0.5 * h, size=2)

    def rows(self, t: float, observation: Observation, values: np.ndarray) -> list[dict[str, Any]]:
        return [{"t": t, "particle": int(observation.selection), "x": float(values[0]),
                 "y": float(values[1])}]

    # ---- prediction --------------------------------------------------------------------
    def queries(self, trial: int = 0) -> list[dict[str, Any]]:
        rng = np.random.default_rng([self.seed, streams.MAD_TRIAL, int(trial)])
        offsets = np.sort(rng.uniform(0.0, self.query_horizon, size=self.defaults.n_queries))
        half = 0.5 * qs.DOMAIN_SIZE
        out = []
        for offset in offsets:
            sides = rng.uniform(1.0, 5.0, size=2)  # ours: rectangles with sides U(1, 5)
            low = rng.uniform(-half, half - sides)
            out.append({"t": round(self.defaults.t_max + max(float(offset), 1e-3), 3),
                        "particle": int(rng.integers(1, 3)),
                        "region": [round(float(low[0]), 4), round(float(low[0] + sides[0]), 4),
                                   round(float(low[1]), 4), round(float(low[1] + sides[1]), 4)]})
        return out

    def prediction_shape(self) -> tuple[int, ...]:
        return ()

    def truth_at_queries(self, trial: int = 0) -> np.ndarray:
        if trial not in self._truth:
            self._truth[trial] = joint_region_probabilities(
                self.packets, self.coupling, self.born_power, self.grid, self.queries(trial),
                self.propagator)
        return self._truth[trial]

    def error(self, predictions: np.ndarray, truth: np.ndarray) -> float:
        return l2_error(predictions, truth)

    @property
    def reference_prose(self) -> str:  # type: ignore[override]
        if self.protocol == "paper":
            return "uniform: region area / domain area"
        if self.law == "normal":
            return ("nearest altered law: of the forecasts of the five altered laws from the "
                    "prepared packets, the one closest to the truth")
        return ("normal physics: the better of the Born rule on the product of the prepared "
                "packets, evolved exactly, and uniform (region area / domain area)")

    def reference_prediction(self, trial: int = 0) -> np.ndarray:
        """Paper: uniform, region area / domain area. Discovery: for an altered law, the
        better of the normal-physics forecast and uniform (the best answer without the
        law: on the entangled laws uniform is sometimes nearer); for the normal law, the
        forecast of the altered law nearest the truth (an agent that assumes any alien
        law scores <= 0)."""
        uniform = np.array([uniform_probability(q["region"]) for q in self.queries(trial)])
        if self.protocol == "paper":
            return uniform
        truth = self.truth_at_queries(trial)
        if self.law != "normal":
            return min((self.law_forecast(*LAWS["normal"], trial), uniform),
                       key=lambda f: self.error(f, truth))
        forecasts = [self.law_forecast(*LAWS[law], trial) for law in self.laws if law != "normal"]
        return min(forecasts, key=lambda f: self.error(f, truth))

    def law_forecast(self, born_power: float, coupling: float, trial: int = 0) -> np.ndarray:
        """Region probabilities at the queries under the outcome rule |Psi|^born_power
        from the prepared packets with correlation exp(-coupling |r1 - r2|^2)."""
        p = self.packets

        def propagator() -> qs.Propagator:
            psi1, psi2 = packet_states(p, self.grid)
            systems = (cached_eigensystem(p.masses[0]), cached_eigensystem(p.masses[1]))
            return qs.Propagator.from_state(
                systems[0], systems[1], qs.entangled_state(psi1, psi2, self.grid, coupling))

        return joint_region_probabilities(p, coupling, born_power, self.grid,
                                          self.queries(trial), propagator)

    # ---- prompt and extras -------------------------------------------------------------
    def prompt_facts(self) -> str:
        half = 0.5 * qs.DOMAIN_SIZE
        wx, wy = qs.WELL_SIZE
        p = self.packets
        if self.initial_state_mode == "given":
            packets = "; ".join(
                f"particle {k + 1}: mass {p.masses[k]:.6g}, centre ({p.means[k][0]:.6g}, "
                f"{p.means[k][1]:.6g}), width {p.widths[k]:.6g}, momentum ({p.momenta[k][0]:.6g}, "
                f"{p.momenta[k][1]:.6g})" for k in range(2))
            preparation = (
                "At t = 0 each particle is prepared in a Gaussian wave packet psi(r) "
                "proportional to exp(-|r - centre|^2 / (4 width^2) + i momentum . r) on the "
                f"cell centres: {packets}. Under standard quantum mechanics the joint initial "
                "state is psi1(r1) psi2(r2). Discretisation (world_facts['discretisation']): "
                "H = -laplacian / (2 m) + V with the 5-point finite-difference Laplacian on "
                f"the periodic {qs.GRID_SIZE} x {qs.GRID_SIZE} cell-centred grid, V = "
                f"{qs.WELL_HEIGHT:g} (1 - w_x(x) w_y(y)), w(s) = [tanh((s + a/2) / e) - "
                f"tanh((s - a/2) / e)] / 2 with a the well's size along that axis and e = "
                f"{qs.WELL_EDGE_WIDTH:g}; a region's probability takes the density as constant "
                "within each cell.")
        else:
            preparation = (
                "At t = 0 each particle is a Gaussian wave packet with unknown mass (particle "
                "1 from U(0, 1), particle 2 from U(0, 5)), centre, width and velocity.")
        return (
            "World: two quantum particles (1 and 2) in 2D, hbar = 1, that do not interact. "
            f"Each moves in the square domain [-{half:g}, {half:g}]^2, on a grid of "
            f"{qs.GRID_SIZE} x {qs.GRID_SIZE} cells per particle, confined by a smoothed box "
            f"well of height {qs.WELL_HEIGHT:g} and size {wx:g} (x) by {wy:g} (y) centred at "
            f"the origin. {preparation} The world may follow standard quantum mechanics or "
            "altered rules (for the probabilities of outcomes, or a correlation between the "
            "particles in the initial state); finding out is part of the task.\n"
            f"Measurements: {self.observation_prose}. You have {MEASUREMENT_RUNS} measurement "
            f"runs of budget {BUDGET:g} each: restart_measurements starts a new run from the "
            "same initial state at t = 0, undoing every collapse.\n"
            "Questions: each query names a time t > T_max, a particle and a rectangular "
            "region [x_min, x_max, y_min, y_max]; predict the probability of finding that "
            "particle in that region at t if nobody had measured anything.")

    def public_facts(self) -> dict[str, Any]:
        half = 0.5 * qs.DOMAIN_SIZE
        facts: dict[str, Any] = {
            "world": self.name, "domain": [-half, half], "grid": qs.GRID_SIZE,
            "cell_size": self.grid.spacing, "well_size": list(qs.WELL_SIZE),
            "well_height": qs.WELL_HEIGHT, "t_max": self.defaults.t_max,
            "n_queries": self.defaults.n_queries, "query_horizon": self.query_horizon,
            "measurement_runs": MEASUREMENT_RUNS, "budget_per_run": BUDGET,
            "mass_ranges": [list(r) for r in MASS_RANGES], "initial_state": None}
        if self.initial_state_mode == "given":
            p = self.packets
            facts["initial_state"] = {
                "masses": list(p.masses), "centres": [list(m) for m in p.means],
                "widths": list(p.widths), "momenta": [list(m) for m in p.momenta],
                "packet": "exp(-|r - centre|^2 / (4 width^2) + i momentum . r), normalised "
                          "so that the cell probabilities |psi|^2 sum to 1"}
            facts["discretisation"] = {
                "grid": "cell-centred: cell (i, j) at (-5 + (i + 1/2) h, -5 + (j + 1/2) h), "
                        f"h = {self.grid.spacing:g}; flat index i * {qs.GRID_SIZE} + j",
                "laplacian": "5-point finite differences, periodic",
                "potential": "V = height (1 - w_x(x) w_y(y)), w(s) = [tanh((s + a/2) / e) - "
                             "tanh((s - a/2) / e)] / 2, a = well size along the axis",
                "well_edge_width": qs.WELL_EDGE_WIDTH,
                "region_probability": "sum over cells of (cell area inside the region / "
                                      "cell area) x cell probability"}
        return facts

    def law_function(self) -> LawFunction:
        power = self.born_power

        def sample_inputs(rng: np.random.Generator) -> list[dict[str, Any]]:
            return [{"amplitude": float(np.exp(rng.uniform(np.log(1e-4), np.log(0.5))))}
                    for _ in range(64)]

        def truth(inputs: list[dict[str, Any]]) -> np.ndarray:
            return np.array([d["amplitude"] ** power for d in inputs])

        return LawFunction(
            name="outcome_weight",
            signature="def outcome_weight(amplitude: float) -> float",
            explanation=(
                "the weight of a grid cell of the two-particle state in the outcome "
                "probabilities, from the magnitude |Psi| of the wave function there (the "
                "probabilities are the weights normalised to sum 1; the Born rule is "
                "amplitude ** 2). If the prepared initial state is not the product "
                "psi1(r1) psi2(r2), also define `initial_correlation(x1, y1, x2, y2)`, the "
                "factor it is multiplied by (then normalised). Both must work elementwise "
                "on NumPy arrays: they are plugged into the exact propagator and read out "
                "for prepared states you have not seen."),
            sample_inputs=sample_inputs, truth=truth)

    def law_rollout(self) -> HeldOut:
        """LAW_SCORE_STATES fresh packet pairs with the world's masses, evolved exactly;
        both particles' cell marginals under a law's outcome rule at the
        LAW_SCORE_TIME_FRACTIONS of T_max."""
        rng = np.random.default_rng([self.seed, LAW_SCORE_STREAM])
        packets = [draw_packets(rng, self.packets.masses) for _ in range(LAW_SCORE_STATES)]
        times = [f * self.defaults.t_max for f in LAW_SCORE_TIME_FRACTIONS]
        first = cached_eigensystem(self.packets.masses[0])
        second = cached_eigensystem(self.packets.masses[1])
        states: dict[float, list[list[np.ndarray]]] = {}

        def evolved(coupling: float) -> list[list[np.ndarray]]:
            if coupling not in states:
                states[coupling] = []
                for p in packets:
                    psi1 = qs.gaussian_packet(self.grid, p.means[0], p.widths[0], p.momenta[0])
                    psi2 = qs.gaussian_packet(self.grid, p.means[1], p.widths[1], p.momenta[1])
                    propagator = qs.Propagator.from_state(
                        first, second, qs.entangled_state(psi1, psi2, self.grid, coupling))
                    states[coupling].append([propagator.state(t) for t in times])
            return states[coupling]

        def rollout(law: str) -> np.ndarray:
            power, coupling = LAWS[law]
            return np.array([[[qs.marginal(psi, k, power) for k in (1, 2)] for psi in row]
                             for row in evolved(coupling)])

        request = {"world": "quantum", "times": times,
                   "packets": [{"means": [list(m) for m in p.means], "widths": list(p.widths),
                                "momenta": [list(m) for m in p.momenta]} for p in packets],
                   "grid": qs.GRID_SIZE, "size": qs.DOMAIN_SIZE}
        arrays = {"first_energies": first.energies, "first_vectors": first.vectors,
                  "second_energies": second.energies, "second_vectors": second.vectors}
        return HeldOut(request, rollout, "normal",
                       tuple(law for law in self.laws if law != "normal"),
                       {"initial_states": LAW_SCORE_STATES, "times": times}, arrays)

    def info(self) -> WorldInfo:
        p = self.packets
        return WorldInfo(
            world=self.name, law=self.law,
            options={"t_max": self.defaults.t_max, "query_horizon": self.query_horizon,
                     "initial_state": self.initial_state_mode},
            constants={"born_power": self.born_power, "lambda": self.coupling,
                       "masses": list(p.masses), "means": [list(m) for m in p.means],
                       "widths": list(p.widths), "momenta": [list(m) for m in p.momenta],
                       "grid": qs.GRID_SIZE, "domain_size": qs.DOMAIN_SIZE,
                       "well_size": list(qs.WELL_SIZE), "well_height": qs.WELL_HEIGHT,
                       "ours": {"well_edge_width": qs.WELL_EDGE_WIDTH,
                                "mass_floor": MASS_FLOOR, "width_floor": WIDTH_FLOOR,
                                "momentum_cap": MOMENTUM_CAP, "wall_margin_widths": WALL_MARGIN,
                                "query_horizon": self.query_horizon,
                                "laplacian": "5-point, periodic",
                                "collapse": "projection onto the measured cell, L2 "
                                            "renormalised, for every p"}})


# ---- region probabilities of undisturbed states, shared by the episodes of a process ----
# The scorer asks for the same states again and again: an entangled law's truth is the
# forecast the normal-law episode of the same seed makes for that law, and the laws share
# initial states. Three routes, cheapest first, each the probabilities
# `qs.region_probability` gives on the evolved joint state, to rounding (tests hold them):
# - no entanglement (coupling 0): a product state, each particle evolved on its own;
# - the Born rule (p = 2): `qs.BornRegions` from the anchor's coefficients, kept per
#   initial state (16 MB each), no joint state formed;
# - another power on an entangled state (the combined law): the joint state at each query
#   time, evolved once per process, its cell marginals kept for every power.
# Keyed by the exact bits of what fixes the state (the packets, masses included, the
# coupling and, for a joint state, the time).
OUTCOME_POWERS = tuple(sorted({power for power, _ in LAWS.values()}))
MARGINAL_CACHE_STATES = 256  # each 2 particles x 3 powers x 1024 floats: ~12 MB in all
BORN_CACHE_STATES = 4  # a seed's entangled initial states, 16 MB each
_MARGINALS: OrderedDict[bytes, dict[tuple[int, float], np.ndarray]] = OrderedDict()
_BORN: OrderedDict[bytes, qs.BornRegions] = OrderedDict()
_MARGINALS_LOCK = threading.Lock()  # doors may score episodes from several threads


def _state_key(packets: Packets, coupling: float, t: float) -> bytes:
    numbers = [*packets.masses, *packets.means[0], *packets.means[1], *packets.widths,
               *packets.momenta[0], *packets.momenta[1], coupling, t]
    return np.array(numbers, dtype=np.float64).tobytes()


def _remembered(cache: OrderedDict, key: bytes, make: Callable[[], Any], limit: int) -> Any:
    """cache[key], made by `make` on a miss; the least recently used beyond `limit` go."""
    with _MARGINALS_LOCK:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
            return value
    value = make()
    with _MARGINALS_LOCK:
        cache[key] = value
        while len(cache) > limit:
            cache.popitem(last=False)
    return value


def packet_states(packets: Packets, grid: qs.QuantumGrid) -> tuple[np.ndarray, np.ndarray]:
    """The two prepared one-particle packets."""
    p = packets
    return (qs.gaussian_packet(grid, p.means[0], p.widths[0], p.momenta[0]),
            qs.gaussian_packet(grid, p.means[1], p.widths[1], p.momenta[1]))


def joint_region_probabilities(packets: Packets, coupling: float, born_power: float,
                               grid: qs.QuantumGrid, queries: Sequence[dict],
                               propagator: Callable[[], qs.Propagator]) -> np.ndarray:
    """Region probabilities at the queries (dicts with "t", "particle", "region") under
    the outcome rule |Psi|^born_power, for the joint state that `propagator` evolves
    exactly: the initial state of `packets` with correlation exp(-coupling |r1 - r2|^2).
    `propagator` is called only when the route taken needs it and nothing is cached."""
    if coupling == 0.0:
        systems = (cached_eigensystem(packets.masses[0]), cached_eigensystem(packets.masses[1]))
        return qs.product_forecast(systems, packet_states(packets, grid), born_power, grid,
                                   queries)
    if born_power == 2.0:
        born = _remembered(_BORN, _state_key(packets, coupling, math.nan),
                           lambda: qs.BornRegions.of(propagator()), BORN_CACHE_STATES)
        return np.array([born.probability(q["t"], int(q["particle"]),
                                          grid.region_weights(*q["region"])) for q in queries])
    built: list[qs.Propagator] = []

    def marginals(t: float) -> dict[tuple[int, float], np.ndarray]:
        if not built:
            built.append(propagator())
        psi = built[0].state(t)
        entry = {}
        for power in {*OUTCOME_POWERS, born_power}:
            # what qs.marginal sums, for both particles at once
            density = qs.joint_density(psi, power)
            entry[(1, power)], entry[(2, power)] = density.sum(axis=1), density.sum(axis=0)
        return entry

    out = []
    for q in queries:
        t = float(q["t"])
        entry = _remembered(_MARGINALS, _state_key(packets, coupling, t),
                            lambda t=t: marginals(t), MARGINAL_CACHE_STATES)
        weights = grid.region_weights(*q["region"])
        out.append(float(np.dot(entry[(int(q["particle"]), born_power)], weights)))
    return np.array(out)


def uniform_probability(region: list[float]) -> float:
    """Area of the region (clipped to the domain) over the domain's area."""
    half = 0.5 * qs.DOMAIN_SIZE
    x0, x1, y0, y1 = (float(v) for v in region)
    width = max(0.0, min(x1, half) - max(x0, -half))
    height = max(0.0, min(y1, half) - max(y0, -half))
    return width * height / qs.DOMAIN_SIZE**2
