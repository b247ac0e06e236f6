"""The fluid world: 2D incompressible Navier-Stokes on the periodic square [0, 2 pi]^2
(nu = 1e-3), a Kelvin-Helmholtz double shear layer from the seed, under the standard
law or an "alien" force f = C(u, omega) u_perp. Implements the `World` interface on
top of `fluid_solver`.

Two protocols: `discovery` (default; 64^2, T_max 3) asks for a fresh double shear layer,
revealed with the questions, at times after its preparation, scored against normal
physics run from it (the normal law: the nearest altered law); `paper` (128^2, T_max 60)
asks for the measured world's own future, scored against persistence.

The trajectory is integrated once per (seed, law, resolution) and cached in memory and
on disk (under `cache_dir("mad", "fluid")`) as snapshots every SNAPSHOT_INTERVAL time
units. The field at any time t is the snapshot before t advanced to t exactly by the
same integrator, and the vorticity at any point is the exact Fourier series of that
band-limited field, so every value read is a state of the solver (no interpolation
error in time or space)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...core import RunOption, ToolInputError
from ...core.array_cache import ArrayCache, digest
from ...physics import fluid_solver as fs
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

CACHE_FORMAT = 1  # bump when the solver or the initial state changes

VISCOSITY = 1e-3  # paper
T_MAX = 60.0  # paper
BUDGET = 200.0  # paper
N_QUERIES = 5  # paper
THICKNESS_RANGE = (0.05, 0.2)  # paper: shear-layer thickness delta ~ U(0.05, 0.2)
AMPLITUDE_RANGE = (0.15, 0.5)  # paper: perturbation amplitude ~ U(0.15, 0.5)
DEFAULT_RESOLUTION = 128  # ours: 128^2 (paper 512^2); see README for the accuracy cost
QUERY_HORIZON = 10.0  # ours: query times are T_max + U(0, 10], sorted
N_QUERY_POINTS = 16  # ours: the same 16 points (public from the start) at every query time
SNAPSHOT_INTERVAL = 1.0  # ours: cached snapshots every time unit
MAX_POINTS_PER_MEASUREMENT = 64  # ours
CFL = 0.5  # ours: Courant number of the adaptive step
COMBINED_ALPHA = 0.5  # paper: alpha of the combined law
COMBINED_GAMMAS = (0.5, 5.0)  # ours: the combined law mixes vel0.5 and vort5
# The law score (law_rollout.py), ours: held-out shear layers on a coarser grid, where
# NumPy in the sandbox runs a rollout in seconds.
LAW_SCORE_STATES = 3
LAW_SCORE_RESOLUTION = 64
LAW_SCORE_DT = 1.0 / 128  # CFL <= 0.4 for |u| + |v| <= 1.5 under every law (factor <= 3.1)
LAW_SCORE_HORIZON = 4.0  # time units; vorticity compared every unit
LAW_SCORE_SAMPLE_STRIDE = 2  # compare on every second grid point (32 x 32)
# Scoring protocols, default first (ours; README, Calibration). "discovery": after the
# measurements the agent is given a fresh double shear layer (thickness, amplitude and
# an x-shift, public) and predicts its vorticity at the query points at times U(0, H]
# after it; the truth is that preparation under the world's law, the reference normal
# physics from it (the normal law: the nearest altered law's forecast), so passing needs
# the law. "paper": the measured world's own future, skill against persistence.
PROTOCOLS = ("discovery", "paper")
DEFAULT_PROTOCOL = "discovery"
# Discovery defaults (ours): a coarser grid and short windows, so an episode costs
# seconds (README: the accuracy cost of 64 against 128, and why these windows).
DISCOVERY_RESOLUTION = 64
DISCOVERY_T_MAX = 3.0
DISCOVERY_QUERY_HORIZON = 3.0

LAWS: dict[str, fs.Modulation | None] = {
    "normal": None,
    "vel0.5": fs.VelocityModulation(gamma=0.5),
    "vel0.7": fs.VelocityModulation(gamma=0.7),
    "vort5": fs.VorticityModulation(gamma=5.0),
    "vort10": fs.VorticityModulation(gamma=10.0),
    "combined": fs.CombinedModulation(fs.VelocityModulation(gamma=COMBINED_GAMMAS[0]),
                                      fs.VorticityModulation(gamma=COMBINED_GAMMAS[1]),
                                      alpha=COMBINED_ALPHA),
}


@dataclass(frozen=True)
class ShearLayer:
    """The initial state drawn from the seed (independent of the law)."""

    thickness: float
    amplitude: float


def sample_shear_layer(seed: int) -> ShearLayer:
    """delta ~ U(0.05, 0.2), amplitude ~ U(0.15, 0.5)."""
    rng = np.random.default_rng([int(seed), streams.MAD_WORLD_INIT])
    return ShearLayer(float(rng.uniform(*THICKNESS_RANGE)),
                      float(rng.uniform(*AMPLITUDE_RANGE)))


class FluidTrajectory:
    """Cached snapshots of one run; the field at any time by exact integration."""

    def __init__(self, law: str, resolution: int, snapshots: np.ndarray,
                 interval: float) -> None:
        self.law = law
        self.resolution = resolution
        self.snapshots = snapshots  # (K, N, N//2+1) dealiased real-FFT coefficients
        self.interval = interval

    def field_hat_at(self, t: float) -> np.ndarray:
        """Real-FFT vorticity coefficients at time t (within the cached span)."""
        k = min(int(math.floor(t / self.interval + 1e-12)), len(self.snapshots) - 1)
        t_k = k * self.interval
        if t - t_k <= 1e-12:
            return self.snapshots[k]
        solution = fs.simulate_from(self.snapshots[k], t_k, [t], nu=VISCOSITY,
                                    modulation=LAWS[self.law], cfl=CFL)
        return solution.omega_hat[-1]

    def vorticity(self, t: float, points: np.ndarray) -> np.ndarray:
        """Vorticity at time t at points (P, 2) of [0, 2 pi)^2."""
        return fs.evaluate_at_points(self.field_hat_at(t), points[:, 0], points[:, 1])


def _keep_block(omega_hat: np.ndarray) -> np.ndarray:
    """The modes the 2/3 rule keeps (the rest are zero): a smaller cache."""
    n = omega_hat.shape[-2]
    cut = n // 3 + 1
    return np.concatenate([omega_hat[..., :cut, :cut], omega_hat[..., n - cut:, :cut]], axis=-2)


def _expand_block(block: np.ndarray, n: int) -> np.ndarray:
    cut = n // 3 + 1
    out = np.zeros((*block.shape[:-2], n, n // 2 + 1), dtype=complex)
    out[..., :cut, :cut] = block[..., :cut, :]
    out[..., n - cut:, :cut] = block[..., cut:, :]
    return out


_CACHE = ArrayCache("mad", "fluid", memory_items=8)


def get_trajectory(seed: int, law: str, resolution: int, t_end: float) -> FluidTrajectory:
    """The cached trajectory of (seed, law, resolution) covering [0, t_end]; integrated on
    first use, then read from memory or disk (the resolved spectral block only)."""
    layer = sample_shear_layer(seed)
    n_snapshots = math.ceil(t_end / SNAPSHOT_INTERVAL - 1e-9) + 1
    config = {"format": CACHE_FORMAT, "law": law, "resolution": resolution, "nu": VISCOSITY,
              "cfl": CFL, "interval": SNAPSHOT_INTERVAL, "snapshots": n_snapshots,
              "thickness": layer.thickness, "amplitude": layer.amplitude,
              "modulation": repr(LAWS[law])}

    def compute() -> dict[str, np.ndarray]:
        omega0 = fs.double_shear_layer(resolution, layer.thickness, layer.amplitude)
        times = np.arange(n_snapshots) * SNAPSHOT_INTERVAL
        snapshots = fs.simulate(omega0, times, nu=VISCOSITY, modulation=LAWS[law],
                                cfl=CFL).omega_hat
        return {"block": _keep_block(snapshots)}

    return _CACHE.get(
        digest(config), f"seed{int(seed)}", compute,
        lambda arrays: FluidTrajectory(law, resolution,
                                       _expand_block(arrays["block"], resolution),
                                       SNAPSHOT_INTERVAL))


@dataclass(frozen=True)
class Preparation:
    """A fresh double shear layer (discovery protocol): omega = double_shear_layer(N,
    thickness, amplitude, phase), i.e. v = amplitude sin(x - phase) on the two layers."""

    thickness: float
    amplitude: float
    phase: float

    def as_dict(self) -> dict[str, float]:
        return {"thickness": self.thickness, "amplitude": self.amplitude, "phase": self.phase}


def draw_preparation(seed: int, trial: int) -> Preparation:
    """delta and A from the world's own ranges, the x-shift uniform, on the preparation
    stream (neither the world's initial state nor the law score's)."""
    rng = np.random.default_rng([int(seed), streams.MAD_PREPARATION, int(trial)])
    return Preparation(float(rng.uniform(*THICKNESS_RANGE)), float(rng.uniform(*AMPLITUDE_RANGE)),
                       float(rng.uniform(0.0, 2.0 * math.pi)))


_PREPARATION_CACHE = ArrayCache("mad", "fluid_preparation", memory_items=64)


def preparation_rollout(preparation: Preparation, law: str, resolution: int,
                        times: list[float], points: np.ndarray) -> np.ndarray:
    """Vorticity of the preparation at `points` (P, 2) at `times` (from t = 0), rolled out
    under `law` by the world's integrator; cached in memory and on disk (agents of a
    calibration share the references)."""
    config = {"format": CACHE_FORMAT, "law": law, "resolution": int(resolution),
              "nu": VISCOSITY, "cfl": CFL, "modulation": repr(LAWS[law]),
              "preparation": preparation.as_dict(), "times": [float(t) for t in times],
              "points": np.asarray(points, dtype=float).tolist()}

    def compute() -> dict[str, np.ndarray]:
        omega0 = fs.double_shear_layer(int(resolution), preparation.thickness,
                                       preparation.amplitude, preparation.phase)
        solution = fs.simulate(omega0, times, nu=VISCOSITY, modulation=LAWS[law], cfl=CFL)
        return {"values": np.stack([fs.evaluate_at_points(w, points[:, 0], points[:, 1])
                                    for w in solution.omega_hat])}

    return _PREPARATION_CACHE.get(digest(config), law, compute, lambda a: a["values"])


def relative_l2(predictions: np.ndarray, truth: np.ndarray) -> float:
    """||prediction - truth||_2 / ||truth||_2 over all query times and points."""
    truth = np.asarray(truth, dtype=float)
    scale = max(float(np.linalg.norm(truth)), 1e-12)
    return float(np.linalg.norm(np.asarray(predictions, dtype=float) - truth) / scale)


LAW_PROSE = {
    "normal": "the standard Navier-Stokes equations",
    "vel0.5": "velocity modulation, gamma = 0.5",
    "vel0.7": "velocity modulation, gamma = 0.7",
    "vort5": "vorticity modulation, gamma = 5",
    "vort10": "vorticity modulation, gamma = 10",
    "combined": "alpha = 0.5 mix of velocity (gamma 0.5) and vorticity (gamma 5) modulation",
}


class FluidWorld(World):
    """Vorticity of a 2D periodic flow; measure it at points, predict it at the query
    points at later times."""

    name = "fluid"
    laws = tuple(LAWS)
    observation_schema: ClassVar[dict[str, Any]] = {
        "type": "array", "minItems": 1, "maxItems": MAX_POINTS_PER_MEASUREMENT,
        "items": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "description": "points [x, y] of [0, 2 pi)^2 where to measure the vorticity",
    }
    observation_prose = (f"`what` is a list of 1 to {MAX_POINTS_PER_MEASUREMENT} points [x, y] "
                         "in [0, 2 pi) x [0, 2 pi); the result is the vorticity at each point, in "
                         "that order; each point is one item")
    prediction_item_schema: ClassVar[dict[str, Any]] = {
        "type": "array", "items": {"type": "number"},
        "description": "vorticity at every query point (in the order of world_facts "
                       "query_points) at one query time",
    }
    protocols = PROTOCOLS
    metric = "relative_l2"
    metric_prose = ("||prediction - truth||_2 / ||truth||_2 over all query times and query "
                    "points together")
    run_options: ClassVar[tuple[RunOption, ...]] = (
        RunOption("resolution", f"fluid: grid size N of the N x N simulation (default "
                  f"{DISCOVERY_RESOLUTION} under discovery, {DEFAULT_RESOLUTION} under "
                  "--protocol paper; paper 512)", int),
        T_MAX_OPTION,
        QUERY_HORIZON_OPTION,
    )

    def __init__(self, *, seed: int, law: str, resolution: int | None = None,
                 t_max: float | None = None, query_horizon: float | None = None,
                 protocol: str = DEFAULT_PROTOCOL) -> None:
        super().__init__(seed=seed, law=law)
        if protocol not in self.protocols:
            raise ValueError(f"unknown protocol {protocol!r}; protocols: "
                             f"{', '.join(self.protocols)}")
        self.protocol = protocol
        paper = protocol == "paper"
        if resolution is None:
            resolution = DEFAULT_RESOLUTION if paper else DISCOVERY_RESOLUTION
        if t_max is None:
            t_max = T_MAX if paper else DISCOVERY_T_MAX
        if query_horizon is None:
            query_horizon = QUERY_HORIZON if paper else DISCOVERY_QUERY_HORIZON
        if not 16 <= int(resolution) <= 2048 or int(resolution) % 2:
            raise ValueError(f"resolution must be an even number between 16 and 2048, got "
                             f"{resolution}")
        if not t_max > 0 or not query_horizon > 0:
            raise ValueError("t_max and query_horizon must be positive")
        self.resolution = int(resolution)
        self.query_horizon = float(query_horizon)
        self.defaults = WorldDefaults(t_max=float(t_max), budget=BUDGET, n_queries=N_QUERIES)
        self.layer = sample_shear_layer(seed)
        rng = np.random.default_rng([self.seed, streams.MAD_FLUID_QUERIES])
        self.query_points = rng.uniform(0.0, 2.0 * math.pi, size=(N_QUERY_POINTS, 2))
        self._trajectory: FluidTrajectory | None = None
        self._truth: dict[int, np.ndarray] = {}

    @property
    def prediction_prose(self) -> str:  # type: ignore[override]
        return (f"one entry per query time (in query order), each a list of {N_QUERY_POINTS} "
                "vorticity values, one per query point in the order of world_facts "
                "query_points")

    def trajectory(self) -> FluidTrajectory:
        if self._trajectory is None:
            # Discovery asks about the preparation: the world itself ends at T_max.
            t_end = self.defaults.t_max + (0.0 if self.asks_preparation else self.query_horizon)
            self._trajectory = get_trajectory(self.seed, self.law, self.resolution, t_end)
        return self._trajectory

    # ---- measurement -------------------------------------------------------------------
    def parse_what(self, what: Any) -> Observation:
        try:
            points = np.asarray(what, dtype=float)
        except (TypeError, ValueError):
            points = np.zeros((0,))
        if points.ndim != 2 or points.shape[1] != 2 or not 1 <= len(points) <= \
                MAX_POINTS_PER_MEASUREMENT:
            raise ToolInputError(f"`what` must be a list of 1 to {MAX_POINTS_PER_MEASUREMENT} "
                                 "points [x, y], e.g. [[1.0, 2.5], [3.1, 0.2]]. Nothing was "
                                 "charged.")
        if not np.all(np.isfinite(points)) or np.any(points < 0) or \
                np.any(points >= 2 * math.pi):
            raise ToolInputError("Every coordinate must lie in [0, 2 pi) (the domain is "
                                 "periodic; wrap your points). Nothing was charged.")
        label = f"{len(points)} point" + ("s" if len(points) > 1 else "")
        return Observation(tuple(map(tuple, points.tolist())), len(points), label)

    def true_values(self, t: float, observation: Observation, rng: np.random.Generator
                    ) -> np.ndarray:
        return self.trajectory().vorticity(t, np.asarray(observation.selection, dtype=float))

    def rows(self, t: float, observation: Observation, values: np.ndarray) -> list[dict[str, Any]]:
        return [{"t": t, "x": float(p[0]), "y": float(p[1]), "vorticity": float(v)}
                for p, v in zip(observation.selection, values, strict=True)]

    # ---- prediction --------------------------------------------------------------------
    @property
    def asks_preparation(self) -> bool:
        """Discovery protocol: the questions are about a fresh preparation."""
        return self.protocol == "discovery"

    def queries(self, trial: int = 0) -> list[dict[str, Any]]:
        """Paper: times T_max + U(0, H]. Discovery: times U(0, H] after the preparation
        (prepared at t = 0). Sorted, from the seed and trial."""
        rng = np.random.default_rng([self.seed, streams.MAD_TRIAL, int(trial)])
        offsets = np.sort(rng.uniform(0.0, self.query_horizon, size=self.defaults.n_queries))
        start = 0.0 if self.asks_preparation else self.defaults.t_max
        return [{"t": round(start + max(float(o), 1e-3), 3)} for o in offsets]

    def preparation(self, trial: int = 0) -> Preparation:
        """The fresh preparation of a trial (discovery protocol)."""
        return draw_preparation(self.seed, trial)

    def answer_facts(self, trial: int = 0) -> dict[str, Any]:
        if not self.asks_preparation:
            return {}
        return {"preparation": self.preparation(trial).as_dict()}

    def preparation_rollout(self, law: str, trial: int = 0) -> np.ndarray:
        """The vorticity of the trial's preparation at the query points and times under
        `law`, by the world's integrator on the world's grid."""
        return preparation_rollout(self.preparation(trial), law, self.resolution,
                                   [q["t"] for q in self.queries(trial)], self.query_points)

    @property
    def question_prose(self) -> str:  # type: ignore[override]
        if self.asks_preparation:
            return (f"query times in (0, {self.query_horizon:g}] and a fresh preparation "
                    "(`preparation`: thickness delta, amplitude A and x-shift phase of a new "
                    "double shear layer at t = 0, exact: u = tanh((y - pi/2) / delta) for y <= "
                    "pi and tanh((3 pi/2 - y) / delta) above, v = A sin(x - phase), in the "
                    "same domain under the same laws, on the same grid); predict its vorticity "
                    "at the query points at the query times")
        return "query times, all after T_max"

    def prediction_shape(self) -> tuple[int, ...]:
        return (N_QUERY_POINTS,)

    def truth_at_queries(self, trial: int = 0) -> np.ndarray:
        if self.asks_preparation:
            return self.preparation_rollout(self.law, trial)
        if trial not in self._truth:
            traj = self.trajectory()
            self._truth[trial] = np.stack([traj.vorticity(q["t"], self.query_points)
                                           for q in self.queries(trial)])
        return self._truth[trial]

    def error(self, predictions: np.ndarray, truth: np.ndarray) -> float:
        return relative_l2(predictions, truth)

    @property
    def reference_prose(self) -> str:  # type: ignore[override]
        if not self.asks_preparation:
            return "persistence: the true state at T_max held fixed"
        if self.law == "normal":
            return ("nearest altered law: of the preparation's forecasts under the five "
                    "altered laws, the one closest to the truth")
        return ("normal physics: the preparation rolled out under the standard Navier-Stokes "
                "equations")

    def reference_prediction(self, trial: int = 0) -> np.ndarray:
        if self.asks_preparation:
            if self.law != "normal":
                return self.preparation_rollout("normal", trial)
            # Where normal physics is the truth it cannot be the reference (skill 0 for
            # the perfect answer): an agent that assumes any alien law scores <= 0.
            truth = self.truth_at_queries(trial)
            altered = [self.preparation_rollout(law, trial) for law in self.laws
                       if law != "normal"]
            return min(altered, key=lambda f: self.error(f, truth))
        at_t_max = self.trajectory().vorticity(self.defaults.t_max, self.query_points)
        return np.stack([at_t_max] * len(self.queries(trial)))

    # ---- prompt and extras -------------------------------------------------------------
    def prompt_facts(self) -> str:
        points = json.dumps(np.round(self.query_points, 6).tolist())
        if self.asks_preparation:
            dealiasing = "2/3 dealiasing of the initial field and of every product"
            question = ("Question: after the measurements you are given a fresh double "
                        "shear layer (its delta, A and an x-shift, exactly) prepared at t = 0 "
                        "in the same world, and predict its vorticity at the query points at "
                        "times after that preparation.\n")
        else:
            dealiasing, question = "2/3 dealiasing", ""
        return (
            "World: a 2D incompressible fluid on the periodic square [0, 2 pi) x [0, 2 pi) "
            f"(x along the first coordinate), kinematic viscosity nu = {VISCOSITY:g}, "
            "velocity (u, v) and vorticity omega = dv/dx - du/dy. At t = 0 it is a double "
            "shear layer: u = tanh((y - pi/2) / delta) for y <= pi and tanh((3 pi/2 - y) / "
            "delta) above (two opposing streams), plus a perturbation v = A sin(x); delta "
            f"was drawn from U{THICKNESS_RANGE} and A from U{AMPLITUDE_RANGE} and both are "
            "unknown. The flow may obey the standard Navier-Stokes equations or an altered "
            "law (an extra body force); finding out is part of the task. The simulator is "
            f"pseudo-spectral on a {self.resolution} x {self.resolution} grid ({dealiasing}, "
            "RK4 with an integrating factor for viscosity, adaptive CFL step); vorticity at "
            "any point is the exact Fourier series of the simulated field.\n"
            f"Measurements: {self.observation_prose}.\n"
            f"{question}"
            f"Query points (the same at every query time; the predictions are the vorticity "
            f"there): {points}.")

    def public_facts(self) -> dict[str, Any]:
        if self.asks_preparation:
            return {**self._paper_public_facts(), "protocol": self.protocol}
        return self._paper_public_facts()

    def _paper_public_facts(self) -> dict[str, Any]:
        return {"world": self.name, "domain": [0.0, 2 * math.pi], "viscosity": VISCOSITY,
                "resolution": self.resolution, "t_max": self.defaults.t_max,
                "n_queries": self.defaults.n_queries, "query_horizon": self.query_horizon,
                "query_points": self.query_points.tolist(),
                "thickness_range": list(THICKNESS_RANGE),
                "amplitude_range": list(AMPLITUDE_RANGE),
                "max_points_per_measurement": MAX_POINTS_PER_MEASUREMENT}

    def law_function(self) -> LawFunction:
        modulation = LAWS[self.law]

        def sample_inputs(rng: np.random.Generator) -> list[dict[str, Any]]:
            return [{"u": float(rng.uniform(-1.5, 1.5)), "v": float(rng.uniform(-1.5, 1.5)),
                     "omega": float(rng.uniform(-20.0, 20.0))} for _ in range(64)]

        def truth(inputs: list[dict[str, Any]]) -> np.ndarray:
            out = []
            for d in inputs:
                if modulation is None:
                    out.append([0.0, 0.0])
                    continue
                c = float(_modulation_numpy(modulation, d["u"], d["v"], d["omega"]))
                out.append([c * d["v"], -c * d["u"]])
            return np.array(out)

        return LawFunction(
            name="body_force",
            signature="def body_force(u: float, v: float, omega: float) -> list[float]",
            explanation=("the extra force per unit mass [f_x, f_y] acting on the fluid at a "
                         "point where the velocity is (u, v) and the vorticity omega; return "
                         "[0.0, 0.0] for the standard Navier-Stokes equations. It must also "
                         "work elementwise on NumPy arrays u, v, omega of one shape (returning "
                         "[f_x, f_y] of that shape): that is how the simulator calls it."),
            sample_inputs=sample_inputs, truth=truth, relative_tolerance=1e-3)

    def law_rollout(self) -> HeldOut:
        """LAW_SCORE_STATES fresh double shear layers (thickness stratified over its
        range, so thin, high-vorticity layers are always among them; amplitude and an
        x-shift uniform; own stream) on a LAW_SCORE_RESOLUTION grid, rolled out with the
        world's Lawson-RK4 step at the fixed step LAW_SCORE_DT (one step for every law,
        so that equal laws give equal rollouts); vorticity kept every time unit on every
        LAW_SCORE_SAMPLE_STRIDE-th grid point."""
        rng = np.random.default_rng([self.seed, LAW_SCORE_STREAM])
        n, k = LAW_SCORE_RESOLUTION, LAW_SCORE_STATES
        edges = np.linspace(*THICKNESS_RANGE, k + 1)
        omega = np.stack([fs.double_shear_layer(n, float(rng.uniform(edges[i], edges[i + 1])),
                                                float(rng.uniform(*AMPLITUDE_RANGE)),
                                                float(rng.uniform(0.0, 2.0 * math.pi)))
                          for i in range(k)])
        steps = int(round(1.0 / LAW_SCORE_DT))
        n_outputs = int(LAW_SCORE_HORIZON)
        stride = LAW_SCORE_SAMPLE_STRIDE
        cache: dict[str, np.ndarray] = {}

        def rollout(law: str) -> np.ndarray:
            if law not in cache:
                w_hat = np.where(fs.SpectralGrid(n).dealias_mask(), np.fft.rfft2(omega), 0.0)
                w_hat[..., 0, 0] = 0.0
                out = []
                for _ in range(n_outputs):
                    w_hat = fs.fixed_step_advance(w_hat, LAW_SCORE_DT, steps, nu=VISCOSITY,
                                                  modulation=LAWS[law])
                    out.append(np.fft.irfft2(w_hat, s=(n, n))[..., ::stride, ::stride])
                cache[law] = np.stack(out, axis=1)
            return cache[law]

        request = {"world": "fluid", "omega": omega.tolist(), "resolution": n,
                   "dt": LAW_SCORE_DT, "steps_per_output": steps, "n_outputs": n_outputs,
                   "nu": VISCOSITY, "sample_stride": stride}
        return HeldOut(request, rollout, "normal",
                       tuple(law for law in self.laws if law != "normal"),
                       {"initial_states": k, "horizon": LAW_SCORE_HORIZON,
                        "resolution": n, "dt": LAW_SCORE_DT})

    def info(self) -> WorldInfo:
        return WorldInfo(
            world=self.name, law=self.law,
            options={"resolution": self.resolution, "t_max": self.defaults.t_max,
                     "query_horizon": self.query_horizon,
                     # the paper protocol's records stay as they were before discovery
                     **({"protocol": self.protocol} if self.asks_preparation else {})},
            constants={"viscosity": VISCOSITY, "budget": BUDGET,
                       "thickness": self.layer.thickness, "amplitude": self.layer.amplitude,
                       "law": LAW_PROSE[self.law],
                       "ours": {"resolution_default": DEFAULT_RESOLUTION,
                                "query_horizon": self.query_horizon,
                                "n_query_points": N_QUERY_POINTS, "cfl": CFL,
                                "snapshot_interval": SNAPSHOT_INTERVAL,
                                "combined_gammas": list(COMBINED_GAMMAS),
                                **({"discovery_resolution_default": DISCOVERY_RESOLUTION,
                                    "discovery_t_max_default": DISCOVERY_T_MAX,
                                    "discovery_query_horizon_default":
                                        DISCOVERY_QUERY_HORIZON,
                                    "preparation": "delta ~ U(0.05, 0.2), A ~ U(0.15, 0.5), "
                                                   "x-shift ~ U(0, 2 pi)"}
                                   if self.asks_preparation else {})}})


def _modulation_numpy(modulation: fs.Modulation, u: float, v: float, omega: float) -> float:
    """C(u, v, omega) in float64 numpy (the JAX law functions work on arrays too)."""
    import jax

    with jax.enable_x64(True):
        return float(modulation(np.float64(u), np.float64(v), np.float64(omega)))
