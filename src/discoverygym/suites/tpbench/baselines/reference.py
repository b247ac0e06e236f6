"""Scripted calibration agents for tpbench. Both are privileged: the runner hands them
the episode itself (their records are flagged `privileged_agent`), because submitting
the expert's solution needs the expert's solution.

- `reference`: submits the expert solution and reference function (must score 100 %).
- `wrong-sign`: submits the problem's `plausible_wrong` function, a believable slip
  (sign, factor of two, missing term); it must score 0 %, which shows every problem's
  tests discriminate."""

from __future__ import annotations

AGENTS = {
    "reference": "discoverygym.suites.tpbench.baselines.reference:ReferenceAgent",
    "wrong-sign": "discoverygym.suites.tpbench.baselines.reference:WrongSignAgent",
}


class ReferenceAgent:
    """Submits the expert's written solution with the reference code block."""

    privileged = True

    def solve_privileged(self, episode) -> None:  # noqa: ANN001 - a TPBenchEpisode
        problem = episode.calibration_problem()
        episode.call("submit", {"solution": problem.reference_solution_text()})

    def solve(self, view) -> None:  # noqa: ANN001
        raise RuntimeError("the reference agent needs the episode (privileged run)")


class WrongSignAgent:
    """Submits the problem's plausible wrong answer (a problem without one gets an
    answer with no code, which also fails)."""

    privileged = True

    def solve_privileged(self, episode) -> None:  # noqa: ANN001
        problem = episode.calibration_problem()
        episode.call("submit", {"solution": problem.wrong_solution_text()})

    def solve(self, view) -> None:  # noqa: ANN001
        raise RuntimeError("the wrong-sign agent needs the episode (privileged run)")
