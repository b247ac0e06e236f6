"""The classical world: N hard spheres in [-10, 10]^D under a (possibly altered) law of
gravity and inertia. Implements the `World` interface on top of `classical_physics`.
(Over 500 lines: one World implementation, its cache and its reference forecasts.)

A trajectory is integrated once per (seed, configuration) and cached in memory and on
disk (under `cache_dir("mad", "classical")`) as snapshots every
`SNAPSHOT_STRIDE_STEPS` steps; the state at any time is the snapshot before it advanced
by the remaining steps with the same compiled step, so every value read is an exact
state of the integrator. Times are rounded to the step grid (dt = 0.001)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...core import RunOption, ToolInputError
from ...core.array_cache import ArrayCache, digest
from . import constants as C
from . import streams
from .law_rollout import LAW_SCORE_STREAM, TIME_LIMIT_S, HeldOut
from .worlds import (
    QUERY_HORIZON_OPTION,
    T_MAX_OPTION,
    LawFunction,
    Observation,
    ParameterQuestion,
    World,
    WorldDefaults,
    WorldInfo,
)

CACHE_FORMAT = 1  # bump when the integrator or initial conditions change


@dataclass(frozen=True)
class InitialState:
    """Initial conditions drawn from the seed (independent of the law)."""

    x: np.ndarray  # (N, D)
    v: np.ndarray  # (N, D)
    mass: np.ndarray  # (N,)
    radius: np.ndarray  # (N,)


def sample_initial_state(seed: int, n_particles: int, dim: int) -> InitialState:
    """Radii U(0.1, 0.5), masses U(0.5, 5), velocities N(0, 1) per component, positions
    uniform inside the box and at least PLACEMENT_GAP apart (surface to surface)."""
    return draw_initial_state(np.random.default_rng([int(seed), n_particles, dim,
                                                     streams.MAD_WORLD_INIT]),
                              n_particles, dim)


def draw_initial_state(rng: np.random.Generator, n_particles: int, dim: int) -> InitialState:
    """`sample_initial_state` from a given generator (the law score's held-out states
    come from a stream of their own)."""
    radius = rng.uniform(*C.RADIUS_RANGE, size=n_particles)
    mass = rng.uniform(*C.MASS_RANGE, size=n_particles)
    v = rng.normal(0.0, C.VELOCITY_SIGMA, size=(n_particles, dim))
    x = np.zeros((n_particles, dim))
    for i in range(n_particles):
        for _ in range(100_000):
            limit = C.BOX_HALF_WIDTH - radius[i]
            trial = rng.uniform(-limit, limit, size=dim)
            gaps = np.linalg.norm(x[:i] - trial, axis=1) - radius[:i] - radius[i]
            if np.all(gaps >= C.PLACEMENT_GAP):
                x[i] = trial
                break
        else:  # pragma: no cover - the box is far from full for the allowed N
            raise RuntimeError("could not place the spheres without overlap")
    return InitialState(x, v, mass, radius)


def step_index(t: float, dt: float = C.DT) -> int:
    """The integration step nearest to time t."""
    return int(round(t / dt))


class Trajectory:
    """Snapshots of (x, v, S) every `stride` steps from t = 0 to at least `t_end`, and
    exact states in between by integrating on from the previous snapshot."""

    def __init__(self, law: str, inertia_decay: float, init: InitialState,
                 snapshots: dict[str, np.ndarray], stride: int = C.SNAPSHOT_STRIDE_STEPS) -> None:
        self.law = law
        self.inertia_decay = inertia_decay
        self.init = init
        self.x, self.v, self.s = snapshots["x"], snapshots["v"], snapshots["s"]
        self.stride = stride

    @property
    def last_step(self) -> int:
        return (len(self.x) - 1) * self.stride

    def state_at_step(self, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, v, S) after `step` integration steps, as NumPy arrays."""
        from . import classical_physics as P

        if not 0 <= step <= self.last_step:
            raise ValueError(f"step {step} outside the cached trajectory (0..{self.last_step})")
        k, rest = divmod(step, self.stride)
        if rest == 0:
            return self.x[k], self.v[k], self.s[k]
        with P.x64():
            advance = P.advance_for(self.law, self.inertia_decay, self.stride)
            out = advance(P.as_state(self.x[k], self.v[k], self.s[k]),
                          P.as_bodies(self.init.mass, self.init.radius), rest)
            return np.asarray(out.x), np.asarray(out.v), np.asarray(out.s)

    def positions_at(self, t: float) -> np.ndarray:
        return self.state_at_step(step_index(t))[0]


def integrate_snapshots(law: str, inertia_decay: float, init: InitialState, n_snapshots: int,
                        stride: int = C.SNAPSHOT_STRIDE_STEPS) -> dict[str, np.ndarray]:
    """Integrate from t = 0 and keep every `stride`-th state (n_snapshots states)."""
    from . import classical_physics as P

    with P.x64():
        integrator = P.integrator_for(law, inertia_decay, stride)
        out = integrator.snapshots(P.as_state(init.x, init.v),
                                   P.as_bodies(init.mass, init.radius), n_snapshots)
        return {"x": np.asarray(out.x), "v": np.asarray(out.v), "s": np.asarray(out.s)}


def roll_out(law: str, inertia_decay: float, init: InitialState, steps: list[int]
             ) -> np.ndarray:
    """Positions after each of the (increasing) step counts `steps` of the world's
    integrator under `law`, from `init` at step 0 with S = 0. `init`'s arrays may carry
    a leading batch axis (several states at once); the output stacks the times after
    it: (..., len(steps), N, D)."""
    from . import classical_physics as P

    with P.x64():
        integrator = P.integrator_for(law, inertia_decay, C.SNAPSHOT_STRIDE_STEPS)
        return integrator.positions_after(P.as_state(init.x, init.v),
                                          P.as_bodies(init.mass, init.radius), steps)


_CACHE = ArrayCache("mad", "classical", memory_items=64)


def get_trajectory(seed: int, law: str, n_particles: int, dim: int, inertia_decay: float,
                   t_end: float) -> Trajectory:
    """The cached trajectory of (seed, law, N, D, lambda) covering [0, t_end]; integrated
    on first use, then read from memory or disk."""
    init = sample_initial_state(seed, n_particles, dim)
    n_snapshots = math.ceil(step_index(t_end) / C.SNAPSHOT_STRIDE_STEPS) + 1
    config = {"format": CACHE_FORMAT, "law": law, "n": n_particles, "dim": dim,
              "inertia_decay": inertia_decay, "dt": C.DT, "softening": C.SOFTENING,
              "stride": C.SNAPSHOT_STRIDE_STEPS, "snapshots": n_snapshots,
              "ripple": [C.RIPPLE_AMPLITUDE, C.RIPPLE_WAVELENGTH, C.RIPPLE_PHASE]}
    return _CACHE.get(
        digest(config), f"seed{int(seed)}",
        lambda: integrate_snapshots(law, inertia_decay, init, n_snapshots),
        lambda snapshots: Trajectory(law, inertia_decay, init,
                                     {k: snapshots[k] for k in ("x", "v", "s")}))


# ---- the world ------------------------------------------------------------------------
LAW_PROSE = {
    "normal": "Newtonian gravity",
    "kappa10": "anisotropic inertia (kappa = 10)",
    "kappa20": "anisotropic inertia (kappa = 20)",
    "inv-r": "1/R gravity",
    "ripple": "ripple gravity",
    "combined": "1/R gravity with anisotropic inertia (kappa = 10)",
}


# Protocols: `paper` asks for this world's own future after T_max, scored against
# persistence (the published setup); `discovery` (default) asks what the measured laws
# do to a fresh preparation of the world, scored against normal physics run from the
# same preparation, so passing needs the altered law (issue 16; README, Calibration).
PROTOCOLS = ("discovery", "paper")
DEFAULT_PROTOCOL = "discovery"


class ClassicalWorld(World):
    """N spheres in the box [-10, 10]^D; measure positions, predict positions."""

    name = "classical"
    laws = ("normal", "kappa10", "kappa20", "inv-r", "ripple", "combined")
    defaults = WorldDefaults(t_max=C.T_MAX, budget=C.BUDGET, n_queries=C.N_QUERIES)
    observation_schema: ClassVar[dict[str, Any]] = {
        "type": "array", "items": {"type": "integer"}, "minItems": 1,
        "description": "indices of the particles whose positions to measure, e.g. [0, 2]",
    }
    observation_prose = ("`what` is a list of particle indices (0-based, no repeats); the "
                         "result is one position vector per listed particle, in that order")
    prediction_item_schema: ClassVar[dict[str, Any]] = {
        "type": "array", "items": {"type": "array", "items": {"type": "number"}},
        "description": "positions of all particles at one query time: one [x, y(, z)] per particle",
    }
    protocols = PROTOCOLS
    metric = "nrmse"
    metric_prose = ("the root-mean-square position error over all query times and particles, "
                    "divided by the box diagonal 20 sqrt(D)")
    supports_images = True
    parameter_laws: ClassVar[dict[str, tuple[str, ...]]] = {
        "kappa": tuple(f"kappa={k:g}" for k in C.KAPPA_GRID)}
    run_options: ClassVar[tuple[RunOption, ...]] = (
        RunOption("n_particles", f"classical: number of spheres (default "
                  f"{C.DEFAULT_N_PARTICLES})", int),
        RunOption("dim", f"classical: dimension 2 or 3 (default {C.DEFAULT_DIM})", int),
        RunOption("inertia_decay", "classical: lambda of the anisotropic-inertia laws (default "
                  f"{C.INERTIA_DECAY_RATE:g})", float),
        T_MAX_OPTION,
        QUERY_HORIZON_OPTION,
    )

    def __init__(self, *, seed: int, law: str, n_particles: int = C.DEFAULT_N_PARTICLES,
                 dim: int = C.DEFAULT_DIM, inertia_decay: float = C.INERTIA_DECAY_RATE,
                 query_horizon: float | None = None, t_max: float = C.T_MAX,
                 protocol: str = DEFAULT_PROTOCOL) -> None:
        super().__init__(seed=seed, law=law)
        if protocol not in self.protocols:
            raise ValueError(f"unknown protocol {protocol!r}; protocols: "
                             f"{', '.join(self.protocols)}")
        self.protocol = protocol
        if query_horizon is None:
            query_horizon = (C.QUERY_HORIZON if protocol == "paper"
                             else C.DISCOVERY_QUERY_HORIZON)
        if not t_max > 0:
            raise ValueError("t_max must be positive")
        # Per instance: T_max is an option (tests use short worlds; the benchmark 300).
        self.defaults = WorldDefaults(t_max=float(t_max), budget=C.BUDGET,
                                      n_queries=C.N_QUERIES)
        if dim not in (2, 3):
            raise ValueError(f"dim must be 2 or 3, got {dim}")
        if not 1 <= n_particles <= 20:
            raise ValueError(f"n_particles must be between 1 and 20, got {n_particles}")
        if not inertia_decay > 0 or not query_horizon > 0:
            raise ValueError("inertia_decay and query_horizon must be positive")
        self.n_particles = int(n_particles)
        self.dim = int(dim)
        self.inertia_decay = float(inertia_decay)
        self.query_horizon = float(query_horizon)
        self.init = sample_initial_state(seed, self.n_particles, self.dim)
        self._trajectory: Trajectory | None = None
        self._preparation_rollouts: dict[tuple[int, str], np.ndarray] = {}

    @classmethod
    def accepts_law(cls, law: str) -> bool:
        # "kappa=<value>": anisotropic inertia with any kappa (the inference variant).
        if law.startswith("kappa="):
            try:
                return float(law.split("=", 1)[1]) >= 0
            except ValueError:
                return False
        return False

    @property
    def kappa(self) -> float:
        from .classical_physics import build_law

        return build_law(self.law, self.inertia_decay).kappa

    @property
    def prediction_prose(self) -> str:  # type: ignore[override]
        return (f"one entry per query time (in query order), each a list of {self.n_particles} "
                f"positions (particle 0 first), each position a list of {self.dim} coordinates")

    # ---- trajectory --------------------------------------------------------------------
    def trajectory(self) -> Trajectory:
        if self._trajectory is None:
            # Discovery asks about the preparation: the world itself ends at T_max.
            t_end = self.defaults.t_max + (0.0 if self.asks_preparation else self.query_horizon)
            self._trajectory = get_trajectory(self.seed, self.law, self.n_particles, self.dim,
                                              self.inertia_decay, t_end)
        return self._trajectory

    # ---- measurement -------------------------------------------------------------------
    def parse_what(self, what: Any) -> Observation:
        if isinstance(what, int) and not isinstance(what, bool):
            what = [what]
        if not isinstance(what, list) or not what:
            raise ToolInputError(f"`what` must be a non-empty list of particle indices "
                                 f"0..{self.n_particles - 1}. Nothing was charged.")
        bad = [p for p in what if not isinstance(p, int) or isinstance(p, bool)
               or not 0 <= p < self.n_particles]
        if bad:
            raise ToolInputError(f"Unknown particle {bad[0]!r}: particles are numbered 0.."
                                 f"{self.n_particles - 1}. Nothing was charged.")
        if len(set(what)) != len(what):
            raise ToolInputError("`what` lists a particle more than once; list each at most "
                                 "once. Nothing was charged.")
        return Observation(tuple(what), len(what), ",".join(map(str, what)))

    def true_values(self, t: float, observation: Observation, rng: np.random.Generator
                    ) -> np.ndarray:
        return self.trajectory().positions_at(t)[list(observation.selection)]

    def rows(self, t: float, observation: Observation, values: np.ndarray) -> list[dict[str, Any]]:
        axes = "xyz"[: self.dim]
        return [{"t": t, "particle": p, **{a: float(values[k, i]) for i, a in enumerate(axes)}}
                for k, p in enumerate(observation.selection)]

    def render(self, t: float, observation: Observation, values: np.ndarray) -> bytes:
        from .render import render_discs

        return render_discs(values[:, :2], self.init.radius[list(observation.selection)],
                            labels=list(observation.selection), half_width=C.BOX_HALF_WIDTH,
                            title=f"t = {t:g}" + (" (x-y projection)" if self.dim == 3 else ""))

    def render_prose(self) -> str:
        projection = (" In 3D the picture is the projection onto the x-y plane: z is not shown."
                      if self.dim == 3 else "")
        return ("a 512 x 512 PNG of the box seen from above (x to the right, y up, the box "
                f"edge drawn as a frame), each measured particle a numbered disc drawn to scale "
                f"at its noisy measured position.{projection}")

    # ---- prediction --------------------------------------------------------------------
    @property
    def asks_preparation(self) -> bool:
        """Discovery protocol: the questions are about a fresh preparation."""
        return self.protocol == "discovery"

    def queries(self, trial: int = 0) -> list[dict[str, Any]]:
        """Paper: times T_max + U(0, H]. Discovery: times U(0, H] after the preparation
        (prepared at t = 0). Sorted, on the step grid, from the seed and trial."""
        rng = np.random.default_rng([self.seed, streams.MAD_TRIAL, int(trial)])
        offsets = np.sort(rng.uniform(0.0, self.query_horizon, size=self.defaults.n_queries))
        start = 0.0 if self.asks_preparation else self.defaults.t_max
        # Round to the step grid (and stay strictly after the start).
        steps = np.maximum(np.round((start + offsets) / C.DT), step_index(start) + 1)
        return [{"t": round(float(s) * C.DT, 3)} for s in steps]

    def preparation(self, trial: int = 0) -> InitialState:
        """The fresh preparation of a trial (discovery protocol): N new spheres drawn
        like the world's own, on a stream of their own (neither the world's nor the law
        score's)."""
        rng = np.random.default_rng([self.seed, streams.MAD_PREPARATION, int(trial)])
        return draw_initial_state(rng, self.n_particles, self.dim)

    def answer_facts(self, trial: int = 0) -> dict[str, Any]:
        if not self.asks_preparation:
            return {}
        prep = self.preparation(trial)
        return {"preparation": {"x": prep.x.tolist(), "v": prep.v.tolist(),
                                "mass": prep.mass.tolist(), "radius": prep.radius.tolist()}}

    def preparation_rollout(self, law: str, trial: int = 0) -> np.ndarray:
        """Positions of the trial's preparation at its query times under `law`, rolled
        out by the world's integrator (cached per instance)."""
        key = (int(trial), law)
        if key not in self._preparation_rollouts:
            steps = [step_index(q["t"]) for q in self.queries(trial)]
            self._preparation_rollouts[key] = roll_out(law, self.inertia_decay,
                                                       self.preparation(trial), steps)
        return self._preparation_rollouts[key]

    @property
    def question_prose(self) -> str:  # type: ignore[override]
        if self.asks_preparation:
            return (f"query times in (0, {self.query_horizon:g}] and a fresh preparation "
                    f"(`preparation`: x, v, mass and radius of {self.n_particles} new spheres "
                    "at t = 0, exact, in the same box under the same laws, nothing "
                    "accumulated from an earlier motion); predict the positions of the "
                    "new spheres at the query times")
        return "query times, all after T_max"

    def prediction_shape(self) -> tuple[int, ...]:
        return (self.n_particles, self.dim)

    def truth_at_queries(self, trial: int = 0) -> np.ndarray:
        if self.asks_preparation:
            return self.preparation_rollout(self.law, trial)
        traj = self.trajectory()
        return np.stack([traj.positions_at(q["t"]) for q in self.queries(trial)])

    def error(self, predictions: np.ndarray, truth: np.ndarray) -> float:
        return nrmse(predictions, truth, self.dim)

    @property
    def reference_prose(self) -> str:  # type: ignore[override]
        if not self.asks_preparation:
            return "persistence: the true state at T_max held fixed"
        if self.law == "normal":
            return ("the median altered law: the preparation rolled out under the altered "
                    "law whose error is the median of the world's five altered laws")
        return "normal physics: the preparation rolled out under Newtonian gravity and inertia"

    def reference_prediction(self, trial: int = 0) -> np.ndarray:
        if not self.asks_preparation:
            at_t_max = self.trajectory().positions_at(self.defaults.t_max)
            return np.stack([at_t_max] * len(self.queries(trial)))
        if self.law != "normal":
            return self.preparation_rollout("normal", trial)
        # Where normal physics is the truth, it cannot be the reference (skill 0 for the
        # perfect answer); as in the law score, a typical alien law is.
        truth = self.truth_at_queries(trial)
        altered = [self.preparation_rollout(law, trial) for law in self.laws if law != "normal"]
        errors = [self.error(r, truth) for r in altered]
        return altered[int(np.argsort(errors)[len(errors) // 2])]

    # ---- prompt and extras -------------------------------------------------------------
    def prompt_facts(self) -> str:
        radii = ", ".join(f"{r:.4f}" for r in self.init.radius)
        axes = "x, y" + (", z" if self.dim == 3 else "")
        return (
            f"World: {self.n_particles} hard spheres in {self.dim} dimensions inside the box "
            f"[-{C.BOX_HALF_WIDTH:g}, {C.BOX_HALF_WIDTH:g}]^{self.dim} (coordinates {axes}). "
            f"Radii (particle 0 first): {radii}. " + self._mass_prose()
            + "initial velocity components were drawn from N(0, 1), positions uniformly without "
            "overlap. The spheres attract each other through a pair force between their "
            "centres and bounce elastically (restitution 1) off each other and the walls. "
            "Units: G = 1; the simulator uses Plummer softening 1e-4 and semi-implicit Euler "
            f"steps of dt = {C.DT:g}, so measurement times are rounded to multiples of "
            f"{C.DT:g}. The laws of this world may differ from Newtonian gravity and "
            "Newtonian inertia; finding out how is part of the task.\n"
            f"Measurements: {self.observation_prose}. Each observed particle is one item.")

    def _mass_prose(self) -> str:
        # Discovery: the law, not the masses, is what is to be found; with the masses
        # known the law's parameters are identifiable from the measurements.
        if self.asks_preparation:
            masses = ", ".join(f"{m:.6f}" for m in self.init.mass)
            return f"Masses (particle 0 first): {masses} (drawn from U(0.5, 5)); "
        return "Masses are unknown (drawn from U(0.5, 5)); "

    def public_facts(self) -> dict[str, Any]:
        facts = {"world": self.name, "n_particles": self.n_particles, "dim": self.dim,
                 "radii": self.init.radius.tolist(), "box_half_width": C.BOX_HALF_WIDTH,
                 "G": C.G, "softening": C.SOFTENING, "dt": C.DT, "t_max": self.defaults.t_max,
                 "n_queries": self.defaults.n_queries, "query_horizon": self.query_horizon,
                 "mass_range": list(C.MASS_RANGE), "protocol": self.protocol}
        if self.asks_preparation:
            facts["masses"] = self.init.mass.tolist()
        return facts

    def law_function(self) -> LawFunction:
        from .classical_physics import build_law

        force_law = build_law(self.law, self.inertia_decay).force_law
        dim = self.dim

        def sample_inputs(rng: np.random.Generator) -> list[dict[str, Any]]:
            out = []
            for _ in range(64):
                direction = rng.normal(size=dim)
                direction /= np.linalg.norm(direction)
                r = float(np.exp(rng.uniform(np.log(0.2), np.log(30.0))))
                out.append({"m_i": float(rng.uniform(*C.MASS_RANGE)),
                            "m_j": float(rng.uniform(*C.MASS_RANGE)),
                            "r_vec": (r * direction).tolist()})
            return out

        def truth(inputs: list[dict[str, Any]]) -> np.ndarray:
            return np.array([reference_pair_force(force_law, d["m_i"], d["m_j"], d["r_vec"])
                             for d in inputs])

        return LawFunction(
            name="pair_force",
            signature="def pair_force(m_i: float, m_j: float, r_vec: list[float]) -> list[float]",
            explanation=("the force on particle i (mass m_i) exerted by particle j (mass m_j), "
                         "with r_vec = position of j minus position of i, as a list of "
                         f"{dim} numbers (G = 1; ignore softening and collisions). If it also "
                         "works on NumPy arrays (m_i, m_j of shape (P,), r_vec (P, "
                         f"{dim}) -> (P, {dim})) it is called that way, else once per pair "
                         "(slower; the simulation has a time limit of "
                         f"{TIME_LIMIT_S:g} s). If inertia is not a = F / m, also define "
                         "`acceleration(force, mass, memory) -> (a, memory_rate)` on arrays: "
                         f"force (P, {dim}) the total force on each of P particles, mass (P,), "
                         f"memory (P, {dim}, {dim}) a state of your choosing per particle that "
                         "starts at zero and grows by memory_rate * dt each step; it returns a "
                         f"(P, {dim}) and memory_rate (P, {dim}, {dim})."),
            sample_inputs=sample_inputs, truth=truth)

    def law_rollout(self) -> HeldOut:
        """LAW_SCORE_STATES fresh initial states (same distribution as the world's, own
        stream), rolled out LAW_SCORE_HORIZON time units with the world's step and dt,
        positions kept every time unit."""
        rng = np.random.default_rng([self.seed, LAW_SCORE_STREAM])
        states = [draw_initial_state(rng, self.n_particles, self.dim)
                  for _ in range(C.LAW_SCORE_STATES)]
        x, v, mass, radius = (np.stack([getattr(s, f) for s in states])
                              for f in ("x", "v", "mass", "radius"))
        stride, n_outputs = C.SNAPSHOT_STRIDE_STEPS, int(C.LAW_SCORE_HORIZON)
        batch = InitialState(x, v, mass, radius)
        cache: dict[str, np.ndarray] = {}

        def rollout(law: str) -> np.ndarray:
            if law not in cache:
                cache[law] = roll_out(law, self.inertia_decay, batch,
                                      [stride * (k + 1) for k in range(n_outputs)])
            return cache[law]

        request = {"world": "classical", "x": x.tolist(), "v": v.tolist(),
                   "mass": mass.tolist(), "radius": radius.tolist(), "dt": C.DT,
                   "half_width": C.BOX_HALF_WIDTH, "steps_per_output": stride,
                   "n_outputs": n_outputs}
        return HeldOut(request, rollout, "normal",
                       tuple(law for law in self.laws if law != "normal"),
                       {"initial_states": C.LAW_SCORE_STATES,
                        "horizon": C.LAW_SCORE_HORIZON})

    def parameter_question(self) -> ParameterQuestion | None:
        if not self.law.startswith("kappa="):
            return None
        return ParameterQuestion(
            name="kappa",
            prose=("The law is known up to one number: gravity is Newtonian (|F| = G m_i m_j / "
                   "r^2, G = 1) but inertia is anisotropic: each particle's acceleration is "
                   "a = M^-1 F with M = m I + kappa S, where m is its mass, I the identity, and "
                   "S a matrix with S = 0 at t = 0 and dS/dt = -lambda S + a a^T (lambda = "
                   f"{self.inertia_decay:g}). Estimate kappa, one of "
                   f"{', '.join(f'{k:g}' for k in C.KAPPA_GRID)}."),
            truth=self.kappa, scale_floor=5.0, pass_half_width=2.5,
            candidates=tuple(C.KAPPA_GRID))

    def info(self) -> WorldInfo:
        return WorldInfo(
            world=self.name, law=self.law,
            options={"n_particles": self.n_particles, "dim": self.dim,
                     "inertia_decay": self.inertia_decay, "query_horizon": self.query_horizon,
                     "t_max": self.defaults.t_max},
            constants={"G": C.G, "softening": C.SOFTENING, "dt": C.DT,
                       "box_half_width": C.BOX_HALF_WIDTH, "budget": C.BUDGET,
                       "ours": {"inertia_decay": self.inertia_decay,
                                "query_horizon": self.query_horizon,
                                "placement_gap": C.PLACEMENT_GAP,
                                "snapshot_stride_steps": C.SNAPSHOT_STRIDE_STEPS,
                                "collisions": "simultaneous pair impulses, walls reflect"}})


def nrmse(predictions: np.ndarray, truth: np.ndarray, dim: int) -> float:
    """RMS position error over all queries and particles (Euclidean per particle)
    divided by the box diagonal 20 sqrt(D)."""
    squared = np.sum((np.asarray(predictions) - np.asarray(truth)) ** 2, axis=-1)
    return float(np.sqrt(np.mean(squared)) / (2 * C.BOX_HALF_WIDTH * math.sqrt(dim)))


def reference_pair_force(force_law: Any, m_i: float, m_j: float, r_vec: Any) -> np.ndarray:
    """The (unsoftened) pair force on i from j, r_vec = x_j - x_i, for law checks."""
    from . import classical_physics as P

    r_vec = np.asarray(r_vec, dtype=float)
    r = float(np.linalg.norm(r_vec))
    with P.x64():
        magnitude = float(force_law(np.float64(r)))
    return magnitude * m_i * m_j * r_vec / r

