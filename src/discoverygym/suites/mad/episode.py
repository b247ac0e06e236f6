"""The MaD measure-then-predict protocol, shared by every world: `MadEpisode`, the base
class of the episode variants (the variants and the factory that picks one are in
`variants.py`).

Measurement phase (this base class): `measure(t, what, fidelity)` returns the world's
true values plus Gaussian noise (sigma 0.1 / 0.01 / 0.001 for low / medium / high
fidelity) drawn from the episode's generator, and costs 2 / 5 / 10 units per observed
item against the budget. Time never goes backwards and never passes T_max. Worlds with
more than one measurement run offer `restart_measurements`. The phase ends with
`end_measurements`, or by itself when the budget left cannot pay for any measurement.

Answer phase: the agent may call `describe_law` once (text + a Python function, checked
by execution; this base class), then answers with the variant's tool: `predict` (all
query times at once, revealed at the end of the measurement phase), or, in the
parameter-inference variant, `submit_estimate`. A variant overrides a few hooks: how a
measurement is logged and shown, the answer tools, the answer-phase entry, its prompt
lines, its workspace entries, its scoring, and the truth and metric of its record.

Every bad input raises ToolInputError before anything is charged."""

from __future__ import annotations

import json
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...core import Budget, Episode, ToolInputError, ToolResult, ToolSpec
from . import streams
from .law_check import LawFunctionError, run_law_function
from .law_rollout import score_law_by_rollout
from .worlds import Observation, World, WorldInfo, offers_law_score

# Fidelity -> (noise sigma, cost per observed item). From the MaD Physics paper.
FIDELITIES: dict[str, tuple[float, float]] = {
    "low": (0.1, 2.0),
    "medium": (0.01, 5.0),
    "high": (0.001, 10.0),
}
TRIALS_ERROR = "trials > 1 is the in-context-learning variant (variant='icl')"


@dataclass(frozen=True)
class MeasurementRecord:
    """One measurement as the agent saw it."""

    t: float
    what: str
    fidelity: str
    sigma: float
    cost: float
    values: np.ndarray | None  # None in the visual variant (the agent got a picture)
    run: int = 0  # measurement run within the trial (worlds that allow restarts)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": self.t, "what": self.what, "fidelity": self.fidelity,
                               "sigma": self.sigma, "cost": self.cost, "run": self.run}
        if self.values is not None:
            out["values"] = self.values.tolist()
        return out


class MadEpisode(Episode):
    """One MaD episode of one world under one (hidden) law: the measurement phase, its
    budget and runs, `describe_law`, the shared prompt and workspace, and the record's
    details. Subclasses (one per variant, `variants.py`) supply the answer phase."""

    variant: ClassVar[str]  # the variant's name, as the record's details state it

    def __init__(self, world: World, *, task_id: str, seed: int, options: dict[str, Any],
                 trials: int = 1) -> None:
        self._check_world(world)
        self._check_trials(trials)
        # `protocol` is the scoring protocol (paper, discovery), as in every suite; the
        # variant (predict, infer, ...) is its own field, details["variant"].
        super().__init__(suite="mad", task_id=task_id, seed=seed, options=options,
                         world=world.name,
                         protocol=options.get("protocol") or getattr(world, "protocol", None))
        self._world = world
        self._n_trials = int(trials)
        self._noise_rng = np.random.default_rng([int(seed), streams.MAD_NOISE])
        self._law_rng = np.random.default_rng([int(seed), streams.MAD_LAW_INPUTS])
        self._defaults = world.defaults
        self._trial = 0
        self._runs_started = 0  # measurement runs begun over the whole episode
        self._law_answer: dict[str, Any] | None = None
        self._law_rollout: dict[str, Any] | None = None
        # The counters of what the episode spends: cost units (the limit is granted
        # afresh with each measurement run and trial), observed items (no limit), and
        # final answers (one per trial).
        self._budget = self._add_budget(Budget("cost", self._defaults.budget, renewals=0))
        self._observed_items = self._add_budget(Budget("observations"))
        self._answers = self._add_budget(Budget("submissions", self._n_trials))
        self._start_measurement_phase()
        self._add_tools()

    # ---- hooks of the variants -----------------------------------------------------------
    def _check_world(self, world: World) -> None:
        """Raise ValueError if the world cannot hold this variant."""

    def _check_trials(self, trials: int) -> None:
        """Raise ValueError if the variant cannot hold this many trials (one, here)."""
        if trials < 1 or trials > 1:
            raise ValueError(TRIALS_ERROR)

    @abstractmethod
    def _add_answer_tools(self) -> None:
        """Add the tools of the answer phase (the final answer)."""

    @abstractmethod
    def _enter_answer_phase(self) -> str:
        """Switch to the answer phase and say what is asked."""

    def _answer_phase_data(self) -> dict[str, Any]:
        """What `end_measurements` returns as data besides the phase."""
        return {}

    def _goal_prose(self) -> str:
        """The end of the prompt's first sentence: what the agent does after measuring."""
        return self._world.goal_prose

    def _budget_scope(self) -> str:
        """How the prompt ends the sentence that states the budget."""
        return "."

    @abstractmethod
    def _answer_prompt_line(self) -> str:
        """The prompt's line on the answer phase."""

    def _variant_prompt_lines(self) -> list[str]:
        """Prompt lines of the variant, after the law line."""
        return []

    def _extend_workspace(self, out: dict[str, Any]) -> None:
        """Add the variant's entries to the workspace."""

    def _log_measurement(self, t: float, observation: Observation, fidelity: str,
                         sigma: float, cost: float, noisy: np.ndarray) -> None:
        """Keep a measurement as the agent saw it: in the log and the table of rows."""
        self._measurements.append(MeasurementRecord(t, observation.label, fidelity, sigma,
                                                    cost, noisy, self._run))
        for row in self._world.rows(t, observation, noisy):
            self._rows.append({**row, "fidelity": fidelity, "sigma": sigma, "run": self._run})

    def _show_measurement(self, t: float, observation: Observation, noisy: np.ndarray,
                          data: dict[str, Any]) -> tuple[str, list[bytes]]:
        """What the agent gets of a measurement: text to add, images; may add to data."""
        data["values"] = noisy.tolist()
        return f"\nValues: {json.dumps(np.round(noisy, 6).tolist())}", []

    # ---- state -----------------------------------------------------------------------
    def _start_measurement_phase(self) -> None:
        self._phase = "measure"
        self._measurements: list[MeasurementRecord] = []
        self._rows: list[dict[str, Any]] = []
        self._run = -1  # measurement run within this trial
        self._start_run()

    def _start_run(self) -> None:
        """A measurement run: from the initial state at t = 0, with a fresh budget (the
        budget is per run). Worlds with `measurement_trials` > 1 allow several per
        trial, because measuring changes them (quantum collapse)."""
        self._run += 1
        if self._runs_started:
            self._budget.renew()
        self._t_last: float | None = None
        self._world.start_trial(self._runs_started)
        self._runs_started += 1

    @property
    def _runs_left(self) -> int:
        return self._defaults.measurement_trials - 1 - self._run

    @property
    def _min_item_cost(self) -> float:
        return min(cost for _, cost in FIDELITIES.values())

    # ---- tools -----------------------------------------------------------------------
    def _add_tools(self) -> None:
        world = self._world
        runs = self._defaults.measurement_trials
        self._add_tool(ToolSpec(
            "measure",
            "Buy one noisy measurement. t: the time (not earlier than your previous "
            f"measurement, at most T_max = {self._defaults.t_max:g}); what: "
            f"{world.observation_prose}; fidelity: low | medium | high (noise sigma "
            "0.1 / 0.01 / 0.001, cost 2 / 5 / 10 per observed item).",
            {"type": "object", "properties": {
                "t": {"type": "number", "description": "measurement time"},
                "what": world.observation_schema,
                "fidelity": {"type": "string", "enum": list(FIDELITIES)},
            }, "required": ["t", "what", "fidelity"], "additionalProperties": False},
        ), self._measure)
        self._add_tool(ToolSpec(
            "end_measurements",
            "End the measurement phase. The answer phase starts and the questions (query "
            "times after T_max) are revealed.",
            {"type": "object", "properties": {}, "additionalProperties": False},
        ), self._end_measurements)
        if runs > 1:
            self._add_tool(ToolSpec(
                "restart_measurements",
                f"Start a new measurement run from the initial state (at most {runs} runs): "
                "time goes back to 0, whatever your measurements changed is undone, and "
                f"the budget of {self._defaults.budget:g} is renewed (it is per run). "
                "Earlier runs' measurements are kept.",
                {"type": "object", "properties": {}, "additionalProperties": False},
            ), self._restart_measurements)
        law = world.law_function()
        if law is not None:
            self._add_tool(ToolSpec(
                "describe_law",
                "Optional, once, after end_measurements and before your final answer: state "
                "the law you found, as text and as Python source defining "
                f"`{law.signature}`: {law.explanation} The function is run on random inputs "
                "and compared with the true law, and plugged into the simulator to predict "
                "initial states you have not seen; the results are only recorded.",
                {"type": "object", "properties": {
                    "text": {"type": "string", "minLength": 1},
                    "python_source": {"type": "string", "minLength": 1},
                }, "required": ["text", "python_source"], "additionalProperties": False},
            ), self._describe_law)
        self._add_answer_tools()

    def _measure(self, args: dict[str, Any]) -> ToolResult:
        if self._phase != "measure":
            raise ToolInputError("The measurement phase has ended; measurements are no longer "
                                 "possible. Nothing was charged.")
        t = float(args["t"])
        t_max = self._defaults.t_max
        if t < 0:
            raise ToolInputError(f"t = {t:g} is before the start (t = 0). Nothing was charged.")
        if t > t_max:
            raise ToolInputError(f"t = {t:g} is after T_max = {t_max:g}; measurements must have "
                                 f"t <= {t_max:g}. Nothing was charged.")
        if self._t_last is not None and t < self._t_last:
            raise ToolInputError(f"Time only moves forward: t = {t:g} is earlier than your "
                                 f"previous measurement at t = {self._t_last:g}. Nothing was "
                                 "charged.")
        fidelity = args["fidelity"]
        if fidelity not in FIDELITIES:
            raise ToolInputError(f"Unknown fidelity {fidelity!r}; use low, medium or high. "
                                 "Nothing was charged.")
        sigma, item_cost = FIDELITIES[fidelity]
        observation: Observation = self._world.parse_what(args["what"])
        cost = item_cost * observation.n_items
        self._budget.check(cost)
        values = np.asarray(self._world.true_values(t, observation, self._noise_rng), dtype=float)
        noisy = values + sigma * self._noise_rng.standard_normal(values.shape)
        self._budget.charge(cost)
        self._observed_items.charge(observation.n_items)
        self._t_last = t
        self._log_measurement(t, observation, fidelity, sigma, cost, noisy)
        remaining = self._budget.remaining or 0.0
        text = (f"Measured {observation.label} at t = {t:g} ({fidelity} fidelity, sigma "
                f"{sigma:g}, cost {cost:g}; {remaining:g} of {self._defaults.budget:g} left).")
        data: dict[str, Any] = {"t": t, "what": list(observation.selection)
                                if isinstance(observation.selection, tuple)
                                else observation.selection,
                                "fidelity": fidelity, "sigma": sigma, "cost": cost,
                                "budget_remaining": remaining}
        shown, images = self._show_measurement(t, observation, noisy, data)
        text += shown
        if remaining + 1e-9 < self._min_item_cost and self._runs_left > 0:
            text += ("\nThe budget of this run is spent: call restart_measurements for a new "
                     f"run ({self._runs_left} left) or end_measurements.")
        elif remaining + 1e-9 < self._min_item_cost:
            text += "\nThe budget cannot pay for another measurement, so the measurement " \
                    "phase has ended.\n" + self._enter_answer_phase()
            data["phase"] = self._phase
        return ToolResult(text, data=data, images=images)

    def _restart_measurements(self, args: dict[str, Any]) -> ToolResult:
        if self._phase != "measure":
            raise ToolInputError("The measurement phase has ended; no new run can start. "
                                 "Nothing was charged.")
        if self._runs_left <= 0:
            raise ToolInputError(f"All {self._defaults.measurement_trials} measurement runs "
                                 "have been used; call end_measurements. Nothing was charged.")
        self._start_run()
        return ToolResult(f"Measurement run {self._run + 1} of "
                          f"{self._defaults.measurement_trials} starts from the initial state "
                          f"at t = 0 with a budget of {self._defaults.budget:g}.",
                          data={"run": self._run, "budget_remaining": self._budget.remaining})

    def _end_measurements(self, args: dict[str, Any]) -> ToolResult:
        if self._phase != "measure":
            raise ToolInputError("The measurement phase has already ended. Nothing was charged.")
        text = "Measurement phase ended. " + self._enter_answer_phase()
        data: dict[str, Any] = {"phase": self._phase, **self._answer_phase_data()}
        return ToolResult(text, data=data)

    def _describe_law(self, args: dict[str, Any]) -> ToolResult:
        if self._phase == "measure":
            raise ToolInputError("describe_law comes after end_measurements. Nothing was "
                                 "charged.")
        if self._law_answer is not None:
            raise ToolInputError("describe_law was already answered; it can be answered "
                                 "once. Nothing was charged.")
        law = self._world.law_function()
        assert law is not None
        inputs = law.sample_inputs(self._law_rng)
        try:
            outputs = run_law_function(args["python_source"], law.name, inputs)
        except LawFunctionError as exc:
            raise ToolInputError(f"Your function could not be checked: {exc}. Define "
                                 f"`{law.signature}`. Nothing was recorded; you may try "
                                 "again.") from None
        truth = law.truth(inputs)
        if outputs.shape != truth.shape:
            raise ToolInputError(f"Your function returned outputs of shape "
                                 f"{list(outputs.shape[1:])} per call; expected "
                                 f"{list(truth.shape[1:])}. Nothing was recorded; you may "
                                 "try again.")
        deviation = np.linalg.norm((outputs - truth).reshape(len(truth), -1), axis=1)
        scale = np.linalg.norm(truth.reshape(len(truth), -1), axis=1)
        relative = deviation / np.maximum(scale, 1e-300)
        self._law_answer = {
            "text": args["text"], "python_source": args["python_source"],
            "n_inputs": len(inputs),
            "fraction_correct": float(np.mean(relative <= law.relative_tolerance)),
            "median_relative_error": float(np.median(relative)),
        }
        return ToolResult("Your law was recorded (it is scored after the episode).")

    def _finish_with(self, answer: dict[str, Any]) -> None:
        """End the episode with the final answer, plus the described law if any."""
        if self._law_answer is not None:
            answer["law"] = self._law_answer
        self._finish(answer)

    # ---- what the agent sees -----------------------------------------------------------
    @property
    def prompt(self) -> str:
        d = self._defaults
        world = self._world
        lines = [
            "You are doing an experiment in a simulated physical world whose laws may "
            "differ from textbook physics. First buy noisy measurements under a budget, then "
            + self._goal_prose(),
            "",
            world.prompt_facts(),
            "",
            f"Measurement phase: call measure(t, what, fidelity). 0 <= t <= T_max = {d.t_max:g}, "
            "and t may not be earlier than your previous measurement. Fidelity low / medium / "
            "high adds Gaussian noise of sigma 0.1 / 0.01 / 0.001 to every number and costs "
            f"2 / 5 / 10 per observed item. Budget: {d.budget:g} cost units"
            + self._budget_scope()
            + " Call end_measurements when done (the phase also ends when the budget "
            "cannot pay for another measurement).",
        ]
        if d.measurement_trials > 1:
            lines.append(
                f"You may measure in up to {d.measurement_trials} runs: "
                "restart_measurements starts a new run from the initial state (time back at "
                f"0, a fresh budget of {d.budget:g}; the budget is per run), because a "
                "measurement may change the system. Measurements of all runs are kept.")
        lines.append(self._answer_prompt_line())
        if world.law_function() is not None:
            lines.append("Optionally, before your final answer, call describe_law(text, "
                         "python_source) once to state the law you found (recorded, not part "
                         "of the prediction score).")
        lines.extend(self._variant_prompt_lines())
        lines.append("The workspace variables `measurements` (a table), `measurement_log`, "
                     "`budget_remaining`, `phase`, `world_facts` (the facts above as data) "
                     "and, in the answer phase, `queries`"
                     + "".join(f", `{name}`" for name in self._world.answer_facts(self._trial))
                     + " hold what you have so far.")
        return "\n".join(lines)

    def workspace(self) -> dict[str, Any]:
        import pandas as pd

        out: dict[str, Any] = {
            "measurements": pd.DataFrame(self._rows),
            "measurement_log": [m.as_dict() for m in self._measurements],
            "budget_remaining": self._budget.remaining,
            "budget": self._defaults.budget,
            "t_max": self._defaults.t_max,
            "time_of_last_measurement": self._t_last,
            "measurement_run": self._run,
            "measurement_runs": self._defaults.measurement_trials,
            "phase": "done" if self.done else self._phase,
            "trial": self._trial,
            "n_trials": self._n_trials,
            "world_facts": self._world.public_facts(),
        }
        self._extend_workspace(out)
        return out

    def world_info_for_calibration(self) -> WorldInfo:
        """The world's law name and options, for privileged calibration agents only (the
        law-aware oracle maps the name to the law's form); no agent's view reaches it."""
        return self._world.info()

    def budget_left(self) -> float | None:
        """Cost units left in the current trial's measurement budget."""
        return self._budget.remaining

    # ---- scoring ---------------------------------------------------------------------
    def _details(self) -> dict[str, Any]:
        info = self._world.info()
        details: dict[str, Any] = {"law": info.law, "world_options": info.options,
                                   "constants": info.constants, "variant": self.variant}
        if self._law_answer is not None:
            details["law_answer"] = self._law_answer
        if offers_law_score(self._world):
            details["law_rollout"] = self._law_score()
            details["law_score"] = details["law_rollout"]["score"]
        return details

    def _law_score(self) -> dict[str, Any]:
        """The law score of the described law (held-out rollouts in the sandbox; never
        raises). Computed when the record is written, after the agent has finished, so
        its duration, which depends on the law, tells the agent nothing."""
        if self._law_answer is None:
            return {"score": 0.0, "reason": "describe_law was not called"}
        if self._law_rollout is None:
            self._law_rollout = score_law_by_rollout(
                self._world, self._law_answer["python_source"]) or {
                    "score": 0.0, "reason": "this world has no law score"}
        return self._law_rollout
