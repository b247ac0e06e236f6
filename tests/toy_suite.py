"""A minimal suite used to test the contract and the runner without any physics:
guess a hidden number with a `probe` tool (budgeted) and `submit`."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from discoverygym.core import (
    AgentLimits,
    Budget,
    Case,
    Episode,
    PythonLimits,
    Score,
    Suite,
    TaskInfo,
    ToolInputError,
    ToolResult,
    ToolSpec,
)

#: Set in a verifiers rollout's environment, the episode's tool server (a process with
#: VF_CONFIG) cannot build the episode: a tool server that cannot start.
BROKEN_TOOL_SERVER = "TOY_BROKEN_TOOL_SERVER"


class GuessEpisode(Episode):
    def __init__(self, task_id: str, seed: int, budget: int) -> None:
        super().__init__(suite="toy", task_id=task_id, seed=seed, options={"budget": budget})
        rng = np.random.default_rng(seed)
        self._hidden = float(rng.uniform(0, 100))
        self._budget = Budget("probes", budget)
        self._probes: list[tuple[float, bool]] = []
        self._add_tool(ToolSpec("probe", "Is the hidden number above x?", {
            "type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"],
            "additionalProperties": False}), self._probe)
        self._add_tool(ToolSpec("submit", "Submit the hidden number.", {
            "type": "object", "properties": {"answer": {"type": "number"}},
            "required": ["answer"], "additionalProperties": False}), self._submit)

    @property
    def prompt(self) -> str:
        return "Find the hidden number in [0, 100] within 1."

    def workspace(self) -> dict[str, Any]:
        return {"probes": list(self._probes)}

    def budget_left(self) -> float | None:
        return self._budget.remaining

    def _probe(self, args: dict[str, Any]) -> ToolResult:
        if not 0 <= args["x"] <= 100:
            raise ToolInputError("x must lie in [0, 100]. Nothing was charged.")
        self._budget.charge(1)
        self.usage.observations += 1
        above = self._hidden > args["x"]
        self._probes.append((args["x"], above))
        return ToolResult(f"above: {above}", data={"above": above})

    def _submit(self, args: dict[str, Any]) -> ToolResult:
        self.usage.submissions += 1
        self._finish(args["answer"])
        return ToolResult("submitted")

    def _score(self, answer: Any) -> Score:
        err = abs(answer - self._hidden)
        return Score(passed=err <= 1, score=float(err <= 1), metric="abs_error", value=err,
                     threshold=1.0, truth=self._hidden)


class ToySuite(Suite):
    name = "toy"
    description = "guess a number"
    agent_note = "The hidden number is a real number; a probe tells you which side it is on."
    agent_limits = AgentLimits(messages=60, tokens=1_000_000, time_s=300)
    python_limits = PythonLimits(time_limit_s=20, cpu_s=120)
    seed_draws_truth = True  # the hidden number is drawn from the seed
    default_seeds = (0, 1, 2, 3)

    def tasks(self) -> list[TaskInfo]:
        return [TaskInfo("guess")]

    def episode(self, task_id: str, *, seed: int = 0, **options: Any) -> Episode:
        if os.environ.get(BROKEN_TOOL_SERVER) and "VF_CONFIG" in os.environ:
            raise RuntimeError("the toy simulator is broken on this machine")
        return GuessEpisode(task_id, seed, int(options.get("budget", 10)))

    def plan(self, **options: Any) -> list[Case]:
        return [Case("guess", {"budget": 10})]

    def report_sections(self, records):
        from discoverygym.report.figures import figure_html, new_figure

        fig, ax = new_figure()
        ax.scatter([r["truth"] for r in records], [r["answer"] or 0 for r in records])
        ax.set_xlabel("hidden number")
        ax.set_ylabel("answer")
        return [("answers vs truth", figure_html(fig, "answers vs truth"))]


class Bisect:
    def solve(self, view) -> None:
        lo, hi = 0.0, 100.0
        for _ in range(9):
            mid = (lo + hi) / 2
            if view.call("probe", {"x": mid}).data["above"]:
                lo = mid
            else:
                hi = mid
        view.call("submit", {"answer": (lo + hi) / 2})


class GiveUp:
    def solve(self, view) -> None:
        view.call("probe", {"x": 50})


class Midpoint:
    """Submits the middle of the range without probing (a trivial constant)."""

    def solve(self, view) -> None:
        view.call("submit", {"answer": 50.0})


class Crash:
    def solve(self, view) -> None:
        raise RuntimeError("boom")


class SlowBisect(Bisect):
    """Bisect after a pause, so a run can be killed while episodes are in flight."""

    def solve(self, view) -> None:
        import time

        time.sleep(0.3)
        super().solve(view)


AGENTS = {"bisect": "toy_suite:Bisect", "give-up": "toy_suite:GiveUp", "crash": "toy_suite:Crash",
          "slow-bisect": "toy_suite:SlowBisect", "midpoint": "toy_suite:Midpoint"}
# `discoverygym calibrate toy`: bisection finds the number, the trivial agents cannot.
CALIBRATION = {"oracle": ["bisect"], "baselines": [], "no_science": [],
               "trivial": ["midpoint", "give-up"]}


def install() -> None:
    """Register the toy suite and its agents in this process and, through
    DISCOVERYGYM_PLUGINS, in every worker process it starts."""
    import os

    plugins = [p for p in os.environ.get("DISCOVERYGYM_PLUGINS", "").split(",") if p]
    if "toy_suite" not in plugins:
        os.environ["DISCOVERYGYM_PLUGINS"] = ",".join([*plugins, "toy_suite"])
    register()


def register() -> None:
    from discoverygym.core import register_agents, register_suite

    register_suite("toy", "toy_suite:ToySuite", cli="toy_suite:toy_app")
    register_agents("toy", AGENTS, calibration=CALIBRATION)


def _toy_app():
    import typer

    app = typer.Typer(help="toy tools: a command a plugin suite brings along.")

    @app.command("range")
    def show_range() -> None:
        """Print the range the hidden number lies in."""
        typer.echo("0 100")

    return app


toy_app = _toy_app()
register()  # importing this module as a plugin registers it


_SHARED_STATES: set[str] = set()


def shared_state(label: str, seconds: float = 0.3) -> int:
    """A job for executor tests: 1 when this process computes `label`'s shared state
    (a per-process cache, as mad's quantum marginals), 0 when it had it already; the
    sum over a run counts the shared states computed."""
    import time

    time.sleep(seconds)
    if label in _SHARED_STATES:
        return 0
    _SHARED_STATES.add(label)
    return 1


def pid_after(seconds: float) -> int:
    """A job for executor tests: the worker's process id, after a short sleep (so that
    a pool with several workers would spread such jobs over them)."""
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


def modules_loaded(names: list[str]) -> list[bool]:
    """A job for executor tests: which of these modules the worker had imported before
    the job ran."""
    import sys

    return [name in sys.modules for name in names]
