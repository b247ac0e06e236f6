"""The fluid world: 2D incompressible Navier-Stokes on the periodic square [0, 2 pi]^2
(nu = 1e-3), a Kelvin-Helmholtz double shear layer from the seed, under the standard
law or an "alien" force f = C(u, omega) u_perp. Implements the `World` interface on
top of `fluid_solver`.

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

from ...core import RunOption, ToolInputError, streams
from ...core.array_cache import ArrayCache, digest
from . import fluid_solver as fs
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
    metric = "relative_l2"
    metric_prose = ("||prediction - truth||_2 / ||truth||_2 over all query times and query "
                    "points together")
    run_options: ClassVar[tuple[RunOption, ...]] = (
        RunOption("resolution", f"fluid: grid size N of the N x N simulation (default "
                  f"{DEFAULT_RESOLUTION}; paper 512)", int),
        T_MAX_OPTION,
        QUERY_HORIZON_OPTION,
    )

    def __init__(self, *, seed: int, law: str, resolution: int = DEFAULT_RESOLUTION,
                 t_max: float = T_MAX, query_horizon: float = QUERY_HORIZON) -> None:
        super().__init__(seed=seed, law=law)
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
            t_end = self.defaults.t_max + self.query_horizon
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
    def queries(self, trial: int = 0) -> list[dict[str, Any]]:
        rng = np.random.default_rng([self.seed, streams.MAD_TRIAL, int(trial)])
        offsets = np.sort(rng.uniform(0.0, self.query_horizon, size=self.defaults.n_queries))
        return [{"t": round(self.defaults.t_max + max(float(o), 1e-3), 3)} for o in offsets]

    def prediction_shape(self) -> tuple[int, ...]:
        return (N_QUERY_POINTS,)

    def truth_at_queries(self, trial: int = 0) -> np.ndarray:
        if trial not in self._truth:
            traj = self.trajectory()
            self._truth[trial] = np.stack([traj.vorticity(q["t"], self.query_points)
                                           for q in self.queries(trial)])
        return self._truth[trial]

    def error(self, predictions: np.ndarray, truth: np.ndarray) -> float:
        return relative_l2(predictions, truth)

    def reference_prediction(self, trial: int = 0) -> np.ndarray:
        at_t_max = self.trajectory().vorticity(self.defaults.t_max, self.query_points)
        return np.stack([at_t_max] * len(self.queries(trial)))

    # ---- prompt and extras -------------------------------------------------------------
    def prompt_facts(self) -> str:
        points = json.dumps(np.round(self.query_points, 6).tolist())
        return (
            "World: a 2D incompressible fluid on the periodic square [0, 2 pi) x [0, 2 pi) "
            f"(x along the first coordinate), kinematic viscosity nu = {VISCOSITY:g}, "
            "velocity (u, v) and vorticity omega = dv/dx - du/dy. At t = 0 it is a double "
            "shear layer: u = tanh((y - pi/2) / delta) for y <= pi and tanh((3 pi/2 - y) / "
            "delta) above (two opposing streams), plus a perturbation v = A sin(x); delta "
            f"was drawn from U{THICKNESS_RANGE} and A from U{AMPLITUDE_RANGE} and both are "
            "unknown. The flow may obey the standard Navier-Stokes equations or an altered "
            "law (an extra body force); finding out is part of the task. The simulator is "
            f"pseudo-spectral on a {self.resolution} x {self.resolution} grid (2/3 "
            "dealiasing, RK4 with an integrating factor for viscosity, adaptive CFL step); "
            "vorticity at any point is the exact Fourier series of the simulated field.\n"
            f"Measurements: {self.observation_prose}.\n"
            f"Query points (the same at every query time; the predictions are the vorticity "
            f"there): {points}.")

    def public_facts(self) -> dict[str, Any]:
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
                     "query_horizon": self.query_horizon},
            constants={"viscosity": VISCOSITY, "budget": BUDGET,
                       "thickness": self.layer.thickness, "amplitude": self.layer.amplitude,
                       "law": LAW_PROSE[self.law],
                       "ours": {"resolution_default": DEFAULT_RESOLUTION,
                                "query_horizon": self.query_horizon,
                                "n_query_points": N_QUERY_POINTS, "cfl": CFL,
                                "snapshot_interval": SNAPSHOT_INTERVAL,
                                "combined_gammas": list(COMBINED_GAMMAS)}})


def _modulation_numpy(modulation: fs.Modulation, u: float, v: float, omega: float) -> float:
    """C(u, v, omega) in float64 numpy (the JAX law functions work on arrays too)."""
    import jax

    with jax.enable_x64(True):
        return float(modulation(np.float64(u), np.float64(v), np.float64(omega)))
