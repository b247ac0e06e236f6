"""The variants of the MaD episode, each a small subclass of `MadEpisode` (episode.py)
that overrides its hooks, and `make_episode`, the factory that picks one by name.

- predict (default): after the measurement phase the query times are revealed; the agent
  answers with `predict` (all queries at once), scored by the world's metric against its
  reference forecast.
- infer: the agent estimates a parameter of the law with `submit_estimate`.
- visual: as predict, but each measurement returns a picture instead of numbers.
- icl (in-context learning): as predict, with K trials on the same initial state; after
  each `predict` but the last, a new trial starts with a fresh budget and a summary of
  the earlier ones. The last trial is scored."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ...core import Score, ToolInputError, ToolResult, ToolSpec
from .episode import TRIALS_ERROR, MadEpisode, MeasurementRecord
from .scoring import PASS_SKILL, skill_score
from .worlds import Observation, ParameterQuestion, World


class PredictEpisode(MadEpisode):
    """Measure, then predict the world at the revealed query times."""

    variant = "predict"

    def _add_answer_tools(self) -> None:
        self._add_tool(ToolSpec(
            "predict",
            "Final answer of a trial, after end_measurements: predictions for all query "
            f"times at once, in query order; {self._world.prediction_prose}.",
            {"type": "object", "properties": {
                "predictions": {"type": "array", "items": self._world.prediction_item_schema},
            }, "required": ["predictions"], "additionalProperties": False},
        ), self._predict)

    def _enter_answer_phase(self) -> str:
        self._phase = "predict"
        times = [q["t"] for q in self._world.queries(self._trial)]
        facts = self._world.answer_facts(self._trial)
        return ("Query times (predict for all of them at once, in this order): "
                f"{json.dumps(self._world.queries(self._trial))}. Times: {times}. "
                + "".join(f"{name}: {json.dumps(value)}. " for name, value in facts.items())
                + f"Answer with predict: {self._world.prediction_prose}.")

    def _answer_phase_data(self) -> dict[str, Any]:
        return {"queries": self._world.queries(self._trial),
                **self._world.answer_facts(self._trial)}

    def _answer_prompt_line(self) -> str:
        d = self._defaults
        world = self._world
        return (f"Answer phase: after end_measurements you receive {d.n_queries} "
                f"{world.question_prose}. Call predict(predictions) once with "
                f"{world.prediction_prose}. "
                f"Scored by {world.metric}"
                + (f", {world.metric_prose}" if world.metric_prose else "")
                + " (lower is better).")

    def _extend_workspace(self, out: dict[str, Any]) -> None:
        if self._phase == "predict":
            out.update(self._answer_phase_data())

    def _predict(self, args: dict[str, Any]) -> ToolResult:
        if self._phase == "measure":
            raise ToolInputError("Predictions come after end_measurements (the query times "
                                 "are revealed then). Nothing was charged.")
        predictions = self._world.parse_predictions(args["predictions"], self._trial)
        self._answers.charge(1)
        return self._close_trial(predictions)

    def _close_trial(self, predictions: np.ndarray) -> ToolResult:
        """The trial's predictions are in: end the episode with them."""
        self._finish_with({"predictions": predictions.tolist()})
        return ToolResult("Predictions received. The episode has ended.")

    def _score(self, answer: Any) -> Score:
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
        return Score(passed=bool(skill >= PASS_SKILL), score=max(0.0, skill),
                     metric=world.metric, value=error,
                     threshold=(1.0 - PASS_SKILL) * reference_error,
                     truth=truth.tolist(), details=details)

    def _truth_for_record(self) -> Any:
        return self._world.truth_at_queries(self._n_trials - 1).tolist()

    def _metric_name(self) -> str:
        return self._world.metric


class InferEpisode(MadEpisode):
    """Measure, then estimate a parameter of the law (`submit_estimate`)."""

    variant = "infer"

    def _check_world(self, world: World) -> None:
        if world.parameter_question() is None:
            raise ValueError(f"world '{world.name}' with law {world.law!r} has no parameter "
                             "to infer")

    @property
    def _question(self) -> ParameterQuestion:
        question = self._world.parameter_question()
        assert question is not None
        return question

    def _add_answer_tools(self) -> None:
        self._add_tool(ToolSpec(
            "submit_estimate",
            f"Final answer, after end_measurements: your estimate of {self._question.name}. "
            "Ends the episode.",
            {"type": "object", "properties": {"value": {"type": "number"}},
             "required": ["value"], "additionalProperties": False},
        ), self._submit_estimate)

    def _enter_answer_phase(self) -> str:
        question = self._question
        self._phase = "estimate"
        return question.prose + " Answer with submit_estimate."

    def _goal_prose(self) -> str:
        return "estimate a parameter of the law."

    def _answer_prompt_line(self) -> str:
        return "Answer phase: " + self._question.prose + " Submit it with submit_estimate(value)."

    def _extend_workspace(self, out: dict[str, Any]) -> None:
        question = self._question
        out["parameter"] = {"name": question.name, "candidates": list(question.candidates)}

    def _submit_estimate(self, args: dict[str, Any]) -> ToolResult:
        if self._phase == "measure":
            raise ToolInputError("The estimate comes after end_measurements. Nothing was "
                                 "charged.")
        self._answers.charge(1)
        self._finish_with({"value": float(args["value"])})
        return ToolResult("Estimate received. The episode has ended.")

    def _score(self, answer: Any) -> Score:
        question = self._question
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
        question = self._world.parameter_question()
        return None if question is None else question.truth

    def _metric_name(self) -> str:
        question = self._world.parameter_question()
        return f"{question.name}_relative_error" if question else "error"


class VisualEpisode(PredictEpisode):
    """As predict, but each measurement returns a picture instead of numbers."""

    variant = "visual"

    def _check_world(self, world: World) -> None:
        if not world.supports_images:
            raise ValueError(f"world '{world.name}' has no visual observations")

    def _log_measurement(self, t: float, observation: Observation, fidelity: str,
                         sigma: float, cost: float, noisy: np.ndarray) -> None:
        # The agent got no numbers: the log keeps none, and the table has no rows.
        self._measurements.append(MeasurementRecord(t, observation.label, fidelity, sigma,
                                                    cost, None, self._run))

    def _show_measurement(self, t: float, observation: Observation, noisy: np.ndarray,
                          data: dict[str, Any]) -> tuple[str, list[bytes]]:
        return (" The measurement is the attached picture.",
                [self._world.render(t, observation, noisy)])

    def _variant_prompt_lines(self) -> list[str]:
        return ["Visual variant: each measurement returns a picture instead of numbers: "
                f"{self._world.render_prose()} Read what you need off the picture."]


class IclEpisode(PredictEpisode):
    """In-context learning: as predict, with K trials on the same initial state; the
    last one is scored."""

    variant = "icl"

    def __init__(self, world: World, *, task_id: str, seed: int, options: dict[str, Any],
                 trials: int = 1) -> None:
        super().__init__(world, task_id=task_id, seed=seed, options=options, trials=trials)
        self._trial_predictions: list[np.ndarray] = []
        self._trial_summaries: list[dict[str, Any]] = []

    def _check_trials(self, trials: int) -> None:
        if trials < 1:
            raise ValueError(TRIALS_ERROR)

    def _close_trial(self, predictions: np.ndarray) -> ToolResult:
        self._trial_predictions.append(predictions)
        if self._trial + 1 < self._n_trials:
            return self._next_trial(predictions)
        answer: dict[str, Any] = {"predictions": predictions.tolist()}
        if self._n_trials > 1:
            answer["trial_predictions"] = [p.tolist() for p in self._trial_predictions]
        self._finish_with(answer)
        return ToolResult("Predictions received. The episode has ended.")

    def _next_trial(self, predictions: np.ndarray) -> ToolResult:
        """Close this trial with feedback and start the next one."""
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

    def _budget_scope(self) -> str:
        return " per trial." if self._n_trials > 1 else "."

    def _variant_prompt_lines(self) -> list[str]:
        if self._n_trials <= 1:
            return []
        lines = [
            f"In-context learning: this episode has {self._n_trials} trials on the same "
            "initial state under the same law. Each trial has its own measurement phase "
            "(time restarts at 0, fresh budget) and its own query times. After each "
            "trial you are told your error; a summary of earlier trials is in the "
            "workspace (previous_trials). The last trial is scored."]
        if self._trial_summaries:
            # The context reset of the paper: a fresh reader gets the summary here.
            lines.append(f"You are in trial {self._trial + 1} of {self._n_trials}. "
                         "Earlier trials:\n" + self.trial_summary_text())
        return lines

    def _extend_workspace(self, out: dict[str, Any]) -> None:
        super()._extend_workspace(out)
        if self._n_trials > 1:
            out["previous_trials"] = json.loads(json.dumps(self._trial_summaries))
            out["trial_summary"] = self.trial_summary_text()

    def _score(self, answer: Any) -> Score:
        score = super()._score(answer)
        if self._n_trials > 1:
            score.details["trial_errors"] = ([s[self._world.metric]
                                              for s in self._trial_summaries] + [score.value])
        return score


EPISODE_CLASSES: dict[str, type[MadEpisode]] = {
    "predict": PredictEpisode,
    "infer": InferEpisode,
    "visual": VisualEpisode,
    "icl": IclEpisode,
}
VARIANTS = tuple(EPISODE_CLASSES)


def make_episode(world: World, *, task_id: str, seed: int, options: dict[str, Any],
                 variant: str = "predict", trials: int = 1) -> MadEpisode:
    """The episode of `variant` (predict, infer, visual or icl) in `world`."""
    if variant not in EPISODE_CLASSES:
        raise ValueError(f"unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
    return EPISODE_CLASSES[variant](world, task_id=task_id, seed=seed, options=options,
                                    trials=trials)
