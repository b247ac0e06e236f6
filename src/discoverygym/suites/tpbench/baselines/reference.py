"""Scripted calibration agents for tpbench. Both are privileged: the runner hands them
the episode itself (their records are flagged `privileged_agent`), because submitting
the expert's solution needs the expert's solution.

- `reference`: submits the expert solution and reference function (must score 100 %).
- `wrong-sign`, `wrong-2`, `wrong-3`: submit the problem's first, second or third wrong
  answer (`wrong_answers`: a believable slip such as a sign, a factor of two, a missing
  term); each must score 0 %, which shows every problem's tests see its slips. A problem
  with fewer wrong answers gets an answer with no code, which also fails. (`tpbench
  check` runs every wrong answer of every problem.)"""

from __future__ import annotations

AGENTS = {
    "reference": "discoverygym.suites.tpbench.baselines.reference:ReferenceAgent",
    "wrong-sign": "discoverygym.suites.tpbench.baselines.reference:WrongSignAgent",
    "wrong-2": "discoverygym.suites.tpbench.baselines.reference:SecondWrongAgent",
    "wrong-3": "discoverygym.suites.tpbench.baselines.reference:ThirdWrongAgent",
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
    """Submits the problem's first wrong answer (a problem without one gets an answer
    with no code, which also fails)."""

    privileged = True
    index = 0

    def solve_privileged(self, episode) -> None:  # noqa: ANN001
        problem = episode.calibration_problem()
        episode.call("submit", {"solution": problem.wrong_solution_text(self.index)})

    def solve(self, view) -> None:  # noqa: ANN001
        raise RuntimeError("the wrong-answer agents need the episode (privileged run)")


class SecondWrongAgent(WrongSignAgent):
    """Submits the problem's second wrong answer."""

    index = 1


class ThirdWrongAgent(WrongSignAgent):
    """Submits the problem's third wrong answer."""

    index = 2
