"""The world interface of the MaD suite and the registry of worlds.

The measure-then-predict episode (`episode.py`) knows nothing about physics: it talks
to a `World`. A world is built per episode from `(seed, law, **options)` and answers:

- what an observation is (`observation_schema` for the `what` argument of `measure`,
  `parse_what` to check it and count the observed items that are charged for);
- the noise-free values of an observation (`true_values`; the protocol adds the noise
  of the chosen fidelity from the episode's generator);
- the prediction questions (`queries`, drawn from the seed: times after T_max, or
  times after a fresh preparation that `answer_facts` reveals with them), the expected
  shape of the answers (`prediction_shape`), the truth (`truth_at_queries`)
  and the error (`error`);
- the facts the prompt states (`prompt_facts`), and optionally a picture of an
  observation (`render`, visual variant), an executable law to check an agent's
  function against (`law_function`), a parameter question (`parameter_question`) and
  a per-trial reset (`start_trial`).

Adding a world is one line in `WORLDS` plus a module with a `World` subclass."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...core import RunOption, ToolInputError, UnknownName

if TYPE_CHECKING:
    from .law_rollout import HeldOut

# World name -> "module:Class". Importing happens only when a world is used.
WORLDS: dict[str, str] = {
    "classical": "discoverygym.suites.mad.classical:ClassicalWorld",
    "fluid": "discoverygym.suites.mad.fluid_world:FluidWorld",
    "quantum": "discoverygym.suites.mad.quantum_world:QuantumWorld",
}


# Options every world takes (the protocol's timeline); one text so `discoverygym options
# mad` describes them for all worlds, whichever world registers them first.
T_MAX_OPTION = RunOption("t_max", "last measurement time (default: classical 300, fluid 3 "
                         "under discovery or 60 with --protocol paper, quantum 30)", float)
QUERY_HORIZON_OPTION = RunOption("query_horizon", "query times lie in (T_max, T_max + "
                                 "horizon] (default: classical 30 with --protocol paper, "
                                 "or 20 after the fresh preparation under discovery; "
                                 "fluid 10 with --protocol paper, or 3 after the fresh "
                                 "preparation under discovery; quantum 10)",
                                 float)


@dataclass(frozen=True)
class WorldDefaults:
    """Protocol numbers a world sets: the last measurement time, the budget (cost
    units per measurement run), the number of prediction queries, and how many
    measurement runs from the initial state one trial may use (`restart_measurements`;
    quantum: collapse makes restarts necessary; 1 means no restart)."""

    t_max: float
    budget: float
    n_queries: int = 5
    measurement_trials: int = 1


@dataclass(frozen=True)
class Observation:
    """A checked `what`: the normalised selection and the number of items charged."""

    selection: Any
    n_items: int
    label: str


@dataclass(frozen=True)
class LawFunction:
    """The signature an agent's law function must have, and how to check it: random
    inputs from `sample_inputs(rng)` (JSON-able keyword dicts) and the true outputs
    `truth(inputs)`. Outputs are compared with `relative_tolerance`."""

    name: str
    signature: str
    explanation: str
    sample_inputs: Callable[[np.random.Generator], list[dict[str, Any]]]
    truth: Callable[[list[dict[str, Any]]], np.ndarray]
    relative_tolerance: float = 1e-3


@dataclass(frozen=True)
class ParameterQuestion:
    """A parameter-inference question: the agent states `name` (a number) instead of
    predicting. `truth` stays hidden; `scale_floor` keeps the relative error finite
    when the true value is 0 (error = |estimate - truth| / max(|truth|, scale_floor));
    `pass_half_width`: an estimate within this of the truth passes; `candidates`: the
    values the truth is drawn from (public: the prose names them too)."""

    name: str
    prose: str
    truth: float
    scale_floor: float
    pass_half_width: float
    candidates: tuple[float, ...] = ()


@dataclass
class WorldInfo:
    """What a record stores about the world (constants, law, options)."""

    world: str
    law: str
    options: dict[str, Any] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)


class World(ABC):
    """One world instance: one initial state under one law (hidden), built from the seed."""

    name: ClassVar[str] = ""
    laws: ClassVar[tuple[str, ...]] = ()
    defaults: WorldDefaults  # a class attribute, or set per instance when options change it
    # JSON schema of the `what` argument of `measure`, and what it means in words.
    observation_schema: ClassVar[dict[str, Any]] = {}
    observation_prose: ClassVar[str] = ""
    # JSON schema of one answer to one query (the `predictions` argument is a list of
    # these, one per query, in query order), and what it means in words.
    prediction_item_schema: ClassVar[dict[str, Any]] = {}
    prediction_prose: ClassVar[str] = ""
    # Name of the error metric written to records (e.g. "nrmse").
    metric: ClassVar[str] = "error"
    metric_prose: ClassVar[str] = ""  # how the metric is computed, for the prompt
    # The trivial answer skill is measured against (`reference_prediction`), in words.
    reference_prose: ClassVar[str] = "persistence: the true state at T_max held fixed"
    # What the answer phase asks, for the prompt: the goal (first line) and what arrives
    # with end_measurements (after "you receive <n_queries> ...").
    # A world whose questions are about a fresh preparation (`asks_preparation`) asks
    # for the law first (`goal_prose` below).
    question_prose: ClassVar[str] = "query times, all after T_max"
    # Scoring protocols the world offers, the default first (option `protocol`; a world
    # with more than one takes `protocol=` in its constructor). "paper": the published
    # setup.
    protocols: ClassVar[tuple[str, ...]] = ("paper",)
    # Parameter-inference tasks: parameter name -> the laws such a task draws one of
    # (by seed), e.g. {"kappa": ("kappa=0", "kappa=5", ...)}. Task id: <world>-infer-<name>.
    parameter_laws: ClassVar[dict[str, tuple[str, ...]]] = {}
    # Command-line options of this world (`discoverygym run mad --world NAME --opt v`);
    # their parsed values reach the constructor as keyword arguments.
    run_options: ClassVar[tuple[RunOption, ...]] = ()

    def __init__(self, *, seed: int, law: str, **options: Any) -> None:
        if law not in self.laws and not self.accepts_law(law):
            raise UnknownName(f"World '{self.name}' has no law {law!r}. "
                              f"Laws: {', '.join(self.laws)}.")
        self.seed = int(seed)
        self.law = law

    @property
    def asks_preparation(self) -> bool:
        """Whether the questions are about a fresh preparation (`answer_facts`) rather
        than the measured world's own future. Default: the world's own future."""
        return False

    @property
    def goal_prose(self) -> str:
        if self.asks_preparation:
            return ("find out the laws of this world, then predict how a fresh preparation "
                    "of it evolves.")
        return "predict the state of the world at later times you have not seen."

    @classmethod
    def accepts_law(cls, law: str) -> bool:
        """Laws outside `laws` the world also builds (e.g. a parameter grid)."""
        return False

    # ---- measurement -------------------------------------------------------------------
    @abstractmethod
    def parse_what(self, what: Any) -> Observation:
        """Check a `what` argument; raise ToolInputError (written for the agent) if it
        names something that does not exist."""

    @abstractmethod
    def true_values(self, t: float, observation: Observation, rng: np.random.Generator
                    ) -> np.ndarray:
        """The noise-free values observed at time t (float array; the protocol adds
        Gaussian noise of the fidelity's sigma to every entry). `rng` is the episode's
        generator, for worlds whose measurement itself is random (quantum collapse)."""

    def rows(self, t: float, observation: Observation, values: np.ndarray) -> list[dict[str, Any]]:
        """Flat table rows for the workspace's measurement table (default: one row)."""
        return [{"t": t, "what": observation.label, "values": values.tolist()}]

    def render(self, t: float, observation: Observation, values: np.ndarray) -> bytes:
        """A PNG picture of a (noisy) observation, for the visual variant."""
        raise NotImplementedError(f"world '{self.name}' has no visual observations")

    supports_images: ClassVar[bool] = False

    def render_prose(self) -> str:
        """What the pictures of the visual variant show, for the prompt."""
        return "a PNG picture of the observed values"

    def start_trial(self, index: int) -> None:
        """Reset whatever a measurement changed (quantum collapse): called before every
        measurement run starts from the initial state (the first run of the episode,
        each `restart_measurements`, each icl trial); `index` counts these runs over the
        episode from 0. Deterministic worlds do nothing."""
        return None

    # ---- prediction --------------------------------------------------------------------
    @abstractmethod
    def queries(self, trial: int = 0) -> list[dict[str, Any]]:
        """The prediction questions of a trial (JSON-able dicts with at least "t" > T_max),
        drawn from the seed (and trial index) only."""

    def answer_facts(self, trial: int = 0) -> dict[str, Any]:
        """Public data revealed with the questions of a trial (JSON-able; e.g. a fresh
        preparation whose evolution the queries ask about). Default: none."""
        return {}

    @abstractmethod
    def prediction_shape(self) -> tuple[int, ...]:
        """Shape of the answer to one query."""

    def parse_predictions(self, predictions: Any, trial: int = 0) -> np.ndarray:
        """Check and convert the `predictions` argument: one answer per query, each of
        `prediction_shape()`. Raise ToolInputError otherwise."""
        n_queries = len(self.queries(trial))
        shape = (n_queries, *self.prediction_shape())
        try:
            array = np.asarray(predictions, dtype=float)
        except (TypeError, ValueError):
            raise ToolInputError(
                f"'predictions' must be a regular nested list of numbers of shape {list(shape)} "
                f"({self.prediction_prose}); it could not be read as one. Nothing was "
                "charged.") from None
        if array.shape != shape:
            raise ToolInputError(
                f"'predictions' has shape {list(array.shape)} but must have shape "
                f"{list(shape)}: {self.prediction_prose}. Nothing was charged.")
        if not np.all(np.isfinite(array)):
            raise ToolInputError("'predictions' contains NaN or infinite values; only finite "
                                 "numbers are allowed. Nothing was charged.")
        return array

    @abstractmethod
    def truth_at_queries(self, trial: int = 0) -> np.ndarray:
        """The true answers, shape (n_queries, *prediction_shape())."""

    @abstractmethod
    def error(self, predictions: np.ndarray, truth: np.ndarray) -> float:
        """The prediction error (lower is better)."""

    @abstractmethod
    def reference_prediction(self, trial: int = 0) -> np.ndarray:
        """The reference answer the suite computes itself (persistence of the true
        state at T_max, or a uniform probability); skill scores are relative to it."""

    # ---- prompt, extras, record --------------------------------------------------------
    @abstractmethod
    def prompt_facts(self) -> str:
        """The world's facts for the prompt: geometry, units, what is known and unknown,
        what `what` means, the prediction format. No hidden value."""

    @abstractmethod
    def public_facts(self) -> dict[str, Any]:
        """The prompt's facts as JSON-able data (sizes, counts, geometry) for the
        workspace, so programs need not parse the prompt. No hidden value."""

    def law_function(self) -> LawFunction | None:
        """The executable law an agent's `describe_law` function is checked against."""
        return None

    def law_rollout(self) -> HeldOut | None:
        """Held-out initial states and the host's rollouts under named laws, for the law
        score of an agent's `describe_law` function (`law_rollout.py`); None: no score."""
        return None

    def parameter_question(self) -> ParameterQuestion | None:
        """The parameter-inference question of this world and law, if it has one."""
        return None

    @abstractmethod
    def info(self) -> WorldInfo:
        """Constants, law and options for the record's metadata."""


def offers_law_score(world: World) -> bool:
    """Whether the world rolls out held-out states for a law score."""
    return type(world).law_rollout is not World.law_rollout


def world_class(name: str) -> type[World]:
    """The World subclass registered as `name`."""
    if name not in WORLDS:
        raise UnknownName(f"Unknown MaD world {name!r}. Worlds: {', '.join(WORLDS)}.")
    module, _, attr = WORLDS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def make_world(name: str, *, seed: int, law: str, **options: Any) -> World:
    """Build world `name` for one episode."""
    return world_class(name)(seed=seed, law=law, **options)
