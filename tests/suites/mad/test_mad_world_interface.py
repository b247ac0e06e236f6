"""The world interface is world-agnostic: a tiny made-up world registered with one line
plays the whole protocol (tasks, measurement with noise, measurement runs that undo
what a measurement disturbed, prediction and scoring) without touching the protocol."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from discoverygym.core import ToolInputError
from discoverygym.suites import mad
from discoverygym.suites.mad import worlds
from discoverygym.suites.mad.worlds import Observation, World, WorldDefaults, WorldInfo


class DecayWorld(World):
    """Two sensors a, b reading x0 exp(-rate t) (rate hidden). Reading a sensor disturbs
    it: later readings in the same run are 1 higher (like a collapse), until a new run."""

    name = "decay"
    laws = ("normal", "fast")
    defaults = WorldDefaults(t_max=2.0, budget=10.0, n_queries=3, measurement_trials=3)
    observation_schema: ClassVar[dict[str, Any]] = {
        "type": "array", "items": {"type": "string"}, "minItems": 1}
    observation_prose = "a list of sensor names, a and/or b"
    prediction_item_schema: ClassVar[dict[str, Any]] = {
        "type": "array", "items": {"type": "number"}}
    prediction_prose = "one [a, b] pair per query"
    metric = "rms"

    def __init__(self, *, seed: int, law: str, **options: Any) -> None:
        super().__init__(seed=seed, law=law)
        self.rate = 0.5 if law == "normal" else 2.0
        self.x0 = np.random.default_rng(seed).uniform(1, 2, size=2)
        self.disturbed = np.zeros(2)
        self.runs_started: list[int] = []

    def parse_what(self, what: Any) -> Observation:
        if not all(w in ("a", "b") for w in what):
            raise ToolInputError("Unknown sensor; sensors are a and b. Nothing was charged.")
        return Observation(tuple("ab".index(w) for w in what), len(what), ",".join(what))

    def values_at(self, t: float) -> np.ndarray:
        return self.x0 * np.exp(-self.rate * t)

    def true_values(self, t, observation, rng) -> np.ndarray:
        index = list(observation.selection)
        out = self.values_at(t)[index] + self.disturbed[index]
        self.disturbed[index] = 1.0
        return out

    def start_trial(self, index: int) -> None:
        self.runs_started.append(index)
        self.disturbed[:] = 0.0

    def queries(self, trial: int = 0) -> list[dict[str, Any]]:
        return [{"t": 2.5}, {"t": 3.0}, {"t": 4.0}]

    def prediction_shape(self) -> tuple[int, ...]:
        return (2,)

    def truth_at_queries(self, trial: int = 0) -> np.ndarray:
        return np.stack([self.values_at(q["t"]) for q in self.queries(trial)])

    def error(self, predictions, truth) -> float:
        return float(np.sqrt(np.mean((predictions - truth) ** 2)))

    def reference_prediction(self, trial: int = 0) -> np.ndarray:
        return np.stack([self.values_at(self.defaults.t_max)] * 3)

    def prompt_facts(self) -> str:
        return "Two sensors a and b decay at an unknown rate."

    def public_facts(self) -> dict[str, Any]:
        return {"world": self.name, "sensors": ["a", "b"]}

    def info(self) -> WorldInfo:
        return WorldInfo(self.name, self.law, {}, {"ours": {}})


@pytest.fixture
def suite(monkeypatch):
    monkeypatch.setitem(worlds.WORLDS, "decay", f"{__name__}:DecayWorld")
    return mad.MadSuite()


def test_a_registered_world_gets_tasks_and_plans(suite):
    ids = {t.id for t in suite.tasks()}
    assert {"decay-normal", "decay-fast", "classical-normal"} <= ids
    specs = suite.episodes(world="decay", seeds=[0, 1])
    assert sorted(s.task_id for s in specs) == ["decay-fast"] * 2 + ["decay-normal"] * 2


def test_measurement_runs_restart_the_world_and_renew_the_budget(suite):
    ep = suite.episode("decay-normal", seed=1)
    world = ep._world
    assert world.runs_started == [0]
    assert "restart_measurements" in {t["function"]["name"] for t in ep.tools()}
    assert "up to 3 runs" in ep.prompt
    first = ep.call("measure", {"t": 1.0, "what": ["a"], "fidelity": "medium"})
    second = ep.call("measure", {"t": 1.5, "what": ["a"], "fidelity": "medium"})
    assert abs(first.data["values"][0] - world.values_at(1.0)[0]) < 0.05
    assert abs(second.data["values"][0] - world.values_at(1.5)[0] - 1.0) < 0.05  # disturbed
    assert ep.budget_left() == 0 and ep.workspace()["phase"] == "measure"
    assert "restart_measurements" in second.text
    assert ep.call("measure", {"t": 1.6, "what": ["b"], "fidelity": "low"}).is_error

    restart = ep.call("restart_measurements", {})
    assert not restart.is_error and world.runs_started == [0, 1]
    assert ep.budget_left() == 10 and ep.workspace()["measurement_run"] == 1
    again = ep.call("measure", {"t": 0.5, "what": ["a"], "fidelity": "medium"})  # time reset
    assert abs(again.data["values"][0] - world.values_at(0.5)[0]) < 0.05  # undisturbed
    assert [m["run"] for m in ep.workspace()["measurement_log"]] == [0, 0, 1]
    assert list(ep.workspace()["measurements"]["run"]) == [0, 0, 1]
    assert ep.usage.cost == 15

    assert not ep.call("restart_measurements", {}).is_error
    cost = ep.usage.cost
    refused = ep.call("restart_measurements", {})
    assert refused.is_error and "all 3" in refused.text.lower()
    assert ep.usage.cost == cost and world.runs_started == [0, 1, 2]
    # In the last run a spent budget ends the phase by itself.
    ep.call("measure", {"t": 2.0, "what": ["a", "b"], "fidelity": "medium"})
    assert ep.workspace()["phase"] == "predict"
    assert ep.call("restart_measurements", {}).is_error

    ep.call("predict", {"predictions": world.truth_at_queries().tolist()})
    record = ep.record(agent="test")
    assert record.value == 0.0 and record.passed and record.metric == "rms"
    assert record.world == "decay"


def test_bad_input_to_the_new_world_is_refused(suite):
    ep = suite.episode("decay-fast", seed=0)
    result = ep.call("measure", {"t": 1.0, "what": ["c"], "fidelity": "low"})
    assert result.is_error and "sensors are a and b" in result.text
    assert ep.usage.cost == 0
    ep.call("end_measurements", {})
    bad = ep.call("predict", {"predictions": [[1.0, 2.0]] * 2})
    assert bad.is_error and "[3, 2]" in bad.text
    # A world without measurement runs offers no restart tool.
    classical = suite.episode("classical-normal", seed=0, t_max=5.0, dim=2)
    assert "restart_measurements" not in {t["function"]["name"] for t in classical.tools()}
