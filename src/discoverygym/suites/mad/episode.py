"""The MaD measure-then-predict protocol, shared by every world. (Over 500 lines: the
phases share the budget and the trial state, which is easier to check in one class.)

Measurement phase: `measure(t, what, fidelity)` returns the world's true values plus
Gaussian noise (sigma 0.1 / 0.01 / 0.001 for low / medium / high fidelity) drawn from
the episode's generator, and costs 2 / 5 / 10 units per observed item against the
budget. Time never goes backwards and never passes T_max. The phase ends with
`end_measurements`, or by itself when the budget left cannot pay for any measurement.

Answer phase: the query times (all after T_max, from the seed) are revealed; the agent
may call `describe_law` once (text + a Python function, checked by execution), then
answers with `predict` (all queries at once) or, in the parameter-inference variant,
with `submit_estimate`. In the in-context-learning variant the episode holds K trials
on the same initial state; after each `predict` but the last, a new trial starts with
a fresh budget and a summary of the earlier ones.

Every bad input raises ToolInputError before anything is charged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core import Budget, Episode, Score, ToolInputError, ToolResult, ToolSpec, streams
from .law_check import LawFunctionError, run_law_function
from .law_rollout import score_law_by_rollout
from .scoring import PASS_SKILL, skill_score
from .worlds import Observation, World, WorldInfo, offers_law_score

# Fidelity -> (noise sigma, cost per observed item). From the MaD Physics paper.
FIDELITIES: dict[str, tuple[float, float]] = {
    "low": (0.1, 2.0),
    "medium": (0.01, 5.0),
    "high": (0.001, 10.0),
}
VARIANTS = ("predict", "infer", "visual", "icl")


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
    """One MaD episode of one world under one (hidden) law."""

    def __init__(self, world: World, *, task_id: str, seed: int, options: dict[str, Any],
                 variant: str = "predict", trials: int = 1) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
        if variant == "visual" and not world.supports_images:
            raise ValueError(f"world '{world.name}' has no visual observations")
        if variant == "infer" and world.parameter_question() is None:
            raise ValueError(f"world '{world.name}' with law {world.law!r} has no parameter "
                             "to infer")
        if trials < 1 or (trials > 1 and variant != "icl"):
            raise ValueError("trials > 1 is the in-context-learning variant (variant='icl')")
        super().__init__(suite="mad", task_id=task_id, seed=seed, options=options,
                         world=world.name, protocol=variant)
        self._world = world
        self._variant = variant
        self._n_trials = int(trials)
        self._noise_rng = np.random.default_rng([int(seed), streams.MAD_NOISE])
        self._law_rng = np.random.default_rng([int(seed), streams.MAD_LAW_INPUTS])
        self._defaults = world.defaults
        self._trial = 0
        self._runs_started = 0  # measurement runs begun over the whole episode
        self._law_answer: dict[str, Any] | None = None
        self._law_rollout: dict[str, Any] | None = None
        self._trial_predictions: list[np.ndarray] = []
        self._trial_summaries: list[dict[str, Any]] = []
        self._start_measurement_phase()
        self._add_tools()

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
        self._budget = Budget("cost units", self._defaults.budget)
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
        if self._variant == "infer":
            question = world.parameter_question()
            assert question is not None
            self._add_tool(ToolSpec(
                "submit_estimate",
                f"Final answer, after end_measurements: your estimate of {question.name}. "
                "Ends the episode.",
                {"type": "object", "properties": {"value": {"type": "number"}},
                 "required": ["value"], "additionalProperties": False},
            ), self._submit_estimate)
        else:
            self._add_tool(ToolSpec(
                "predict",
                "Final answer of a trial, after end_measurements: predictions for all query "
                f"times at once, in query order; {world.prediction_prose}.",
                {"type": "object", "properties": {
                    "predictions": {"type": "array", "items": world.prediction_item_schema},
                }, "required": ["predictions"], "additionalProperties": False},
            ), self._predict)

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
        self.usage.cost += cost
        self.usage.observations += observation.n_items
        self._t_last = t
        visual = self._variant == "visual"
        record = MeasurementRecord(t, observation.label, fidelity, sigma, cost,
                                   None if visual else noisy, self._run)
        self._measurements.append(record)
        if not visual:
            for row in self._world.rows(t, observation, noisy):
                self._rows.append({**row, "fidelity": fidelity, "sigma": sigma,
                                   "run": self._run})
        remaining = self._budget.remaining or 0.0
        text = (f"Measured {observation.label} at t = {t:g} ({fidelity} fidelity, sigma "
                f"{sigma:g}, cost {cost:g}; {remaining:g} of {self._defaults.budget:g} left).")
        images: list[bytes] = []
        data: dict[str, Any] = {"t": t, "what": list(observation.selection)
                                if isinstance(observation.selection, tuple)
                                else observation.selection,
                                "fidelity": fidelity, "sigma": sigma, "cost": cost,
                                "budget_remaining": remaining}
        if visual:
            images.append(self._world.render(t, observation, noisy))
            text += " The measurement is the attached picture."
        else:
            data["values"] = noisy.tolist()
            text += f"\nValues: {json.dumps(np.round(noisy, 6).tolist())}"
        if remaining + 1e-9 < self._min_item_cost and self._runs_left > 0:
            text += ("\nThe budget of this run is spent: call restart_measurements for a new "
                     f"run ({self._runs_left} left) or end_measurements.")
        elif remaining + 1e-9 < self._min_item_cost:
            text += "\nThe budget cannot pay for another measurement, so the measurement " \
                    "phase has ended.\n" + self._enter_answer_phase()
            data["phase"] = self._phase
        return ToolResult(text, data=data, images=images)

    def _enter_answer_phase(self) -> str:
        """Switch to the answer phase and say what is asked."""
        question = self._world.parameter_question() if self._variant == "infer" else None
        if question is not None:
            self._phase = "estimate"
            return question.prose + " Answer with submit_estimate."
        self._phase = "predict"
        times = [q["t"] for q in self._world.queries(self._trial)]
        facts = self._world.answer_facts(self._trial)
        return ("Query times (predict for all of them at once, in this order): "
                f"{json.dumps(self._world.queries(self._trial))}. Times: {times}. "
                + "".join(f"{name}: {json.dumps(value)}. " for name, value in facts.items())
                + f"Answer with predict: {self._world.prediction_prose}.")

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
        data: dict[str, Any] = {"phase": self._phase}
        if self._phase == "predict":
            data["queries"] = self._world.queries(self._trial)
            data.update(self._world.answer_facts(self._trial))
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

    def _predict(self, args: dict[str, Any]) -> ToolResult:
        if self._phase == "measure":
            raise ToolInputError("Predictions come after end_measurements (the query times "
                                 "are revealed then). Nothing was charged.")
        predictions = self._world.parse_predictions(args["predictions"], self._trial)
        self.usage.submissions += 1
        self._trial_predictions.append(predictions)
        if self._trial + 1 < self._n_trials:
            return self._next_trial(predictions)
        answer: dict[str, Any] = {"predictions": predictions.tolist()}
        if self._n_trials > 1:
            answer["trial_predictions"] = [p.tolist() for p in self._trial_predictions]
        if self._law_answer is not None:
            answer["law"] = self._law_answer
        self._finish(answer)
        return ToolResult("Predictions received. The episode has ended.")

    def _next_trial(self, predictions: np.ndarray) -> ToolResult:
        """In-context learning: close this trial with feedback and start the next one."""
        truth = self._world.truth_at_queries(self._trial)
        error = self._world.error(predictions, truth)
        summary = {"trial": self._trial, "queries": self._world.queries(self._trial),
                   **self._world.answer_facts(self._trial),
                   "measurements": [m.as_dict() for m in self._measurements],
                   "predictions": predictions.tolist(), self._world.metric: error}
        self._trial_summaries.append(summary)
        self._trial += 1
        self._start_measurement_phase()
        text = (f"Trial {self._trial} of {self._n_trials} is over: your {self._world.metric} "
                f"was {error:.4g}. Trial {self._trial + 1} starts now from the same initial "
                f"state, with a fresh budget of {self._defaults.budget:g} and time back at "
                "0. Summary of the earlier trials:\n" + self.trial_summary_text())
        return ToolResult(text, data={"trial": self._trial, "previous_trials":
                                      self._trial_summaries})

    def trial_summary_text(self) -> str:
        """The in-context-learning summary of the finished trials (one line each)."""
        lines = []
        for s in self._trial_summaries:
            times = sorted({m["t"] for m in s["measurements"]})
            lines.append(f"- trial {s['trial'] + 1}: {len(s['measurements'])} measurements at "
                         f"t = {times}; {self._world.metric} = {s[self._world.metric]:.4g}; "
                         "full data in the workspace variable previous_trials")
        return "\n".join(lines)

    def _submit_estimate(self, args: dict[str, Any]) -> ToolResult:
        if self._phase == "measure":
            raise ToolInputError("The estimate comes after end_measurements. Nothing was "
                                 "charged.")
        self.usage.submissions += 1
        answer: dict[str, Any] = {"value": float(args["value"])}
        if self._law_answer is not None:
            answer["law"] = self._law_answer
        self._finish(answer)
        return ToolResult("Estimate received. The episode has ended.")

    # ---- what the agent sees -----------------------------------------------------------
    @property
    def prompt(self) -> str:
        d = self._defaults
        world = self._world
        lines = [
            "You are doing an experiment in a simulated physical world whose laws may "
            "differ from textbook physics. First buy noisy measurements under a budget, then "
            + ("estimate a parameter of the law." if self._variant == "infer" else
               world.goal_prose),
            "",
            world.prompt_facts(),
            "",
            f"Measurement phase: call measure(t, what, fidelity). 0 <= t <= T_max = {d.t_max:g}, "
            "and t may not be earlier than your previous measurement. Fidelity low / medium / "
            "high adds Gaussian noise of sigma 0.1 / 0.01 / 0.001 to every number and costs "
            f"2 / 5 / 10 per observed item. Budget: {d.budget:g} cost units"
            + (" per trial." if self._n_trials > 1 else ".")
            + " Call end_measurements when done (the phase also ends when the budget "
            "cannot pay for another measurement).",
        ]
        if d.measurement_trials > 1:
            lines.append(
                f"You may measure in up to {d.measurement_trials} runs: "
                "restart_measurements starts a new run from the initial state (time back at "
                f"0, a fresh budget of {d.budget:g}; the budget is per run), because a "
                "measurement may change the system. Measurements of all runs are kept.")
        if self._variant == "infer":
            question = world.parameter_question()
            assert question is not None
            lines.append("Answer phase: " + question.prose
                         + " Submit it with submit_estimate(value).")
        else:
            lines.append(
                f"Answer phase: after end_measurements you receive {d.n_queries} "
                f"{world.question_prose}. Call predict(predictions) once with "
                f"{world.prediction_prose}. "
                f"Scored by {world.metric}"
                + (f", {world.metric_prose}" if world.metric_prose else "")
                + " (lower is better).")
        if world.law_function() is not None:
            lines.append("Optionally, before your final answer, call describe_law(text, "
                         "python_source) once to state the law you found (recorded, not part "
                         "of the prediction score).")
        if self._variant == "visual":
            lines.append("Visual variant: each measurement returns a picture instead of "
                         f"numbers: {world.render_prose()} Read what you need off the picture.")
        if self._n_trials > 1:
            lines.append(
                f"In-context learning: this episode has {self._n_trials} trials on the same "
                "initial state under the same law. Each trial has its own measurement phase "
                "(time restarts at 0, fresh budget) and its own query times. After each "
                "trial you are told your error; a summary of earlier trials is in the "
                "workspace (previous_trials). The last trial is scored.")
            if self._trial_summaries:
                # The context reset of the paper: a fresh reader gets the summary here.
                lines.append(f"You are in trial {self._trial + 1} of {self._n_trials}. "
                             "Earlier trials:\n" + self.trial_summary_text())
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
        if self._phase == "predict":
            out["queries"] = self._world.queries(self._trial)
            out.update(self._world.answer_facts(self._trial))
        if self._variant == "infer":
            question = self._world.parameter_question()
            assert question is not None
            out["parameter"] = {"name": question.name,
                                "candidates": list(question.candidates)}
        if self._n_trials > 1:
            out["previous_trials"] = json.loads(json.dumps(self._trial_summaries))
            out["trial_summary"] = self.trial_summary_text()
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
                                   "constants": info.constants, "variant": self._variant}
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

    def _score(self, answer: Any) -> Score:
        if self._variant == "infer":
            return self._score_estimate(answer)
        world = self._world
        trial = self._n_trials - 1
        predictions = np.asarray(answer["predictions"], dtype=float)
        truth = world.truth_at_queries(trial)
        error = world.error(predictions, truth)
        reference_error = world.error(world.reference_prediction(trial), truth)
        skill = skill_score(error, reference_error)
        details = self._details()
        details.update({"skill": skill, "reference_error": reference_error,
                        "reference": world.reference_prose,
                        "queries": world.queries(trial), **world.answer_facts(trial)})
        if self._n_trials > 1:
            details["trial_errors"] = [s[world.metric] for s in self._trial_summaries] + [error]
        return Score(passed=bool(skill >= PASS_SKILL), score=max(0.0, skill),
                     metric=world.metric, value=error,
                     threshold=(1.0 - PASS_SKILL) * reference_error,
                     truth=truth.tolist(), details=details)

    def _score_estimate(self, answer: Any) -> Score:
        question = self._world.parameter_question()
        assert question is not None
        estimate = float(answer["value"])
        deviation = abs(estimate - question.truth)
        relative = deviation / max(abs(question.truth), question.scale_floor)
        details = self._details()
        details["parameter"] = question.name
        return Score(passed=bool(deviation <= question.pass_half_width),
                     score=max(0.0, 1.0 - relative), metric=f"{question.name}_relative_error",
                     value=relative, threshold=question.pass_half_width
                     / max(abs(question.truth), question.scale_floor),
                     truth=question.truth, details=details)

    def _truth_for_record(self) -> Any:
        if self._variant == "infer":
            question = self._world.parameter_question()
            return None if question is None else question.truth
        return self._world.truth_at_queries(self._n_trials - 1).tolist()

    def _metric_name(self) -> str:
        if self._variant == "infer":
            question = self._world.parameter_question()
            return f"{question.name}_relative_error" if question else "error"
        return self._world.metric
