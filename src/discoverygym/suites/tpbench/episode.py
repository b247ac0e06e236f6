"""The tpbench episode: the prompt states the problem and the answer requirements;
`submit` takes the complete written solution (derivation plus one fenced Python code
block) and ends the episode. The verdict comes from `verifier.verify`."""

from __future__ import annotations

from typing import Any

from ...core import Budget, Episode, EpisodeRecord, Score, ToolInputError, ToolResult, ToolSpec
from .problem import Problem
from .scoring import holistic_prompt, parse_holistic_grade
from .verifier import Verification, verify

MAX_SOLUTION_CHARS = 200_000

SUBMIT_SPEC = ToolSpec(
    "submit",
    "Submit your complete written solution: the derivation, then the final answer as one "
    "fenced ```python code block that defines the required function. One submission ends "
    "the episode.",
    {"type": "object",
     "properties": {"solution": {"type": "string", "minLength": 1,
                                 "maxLength": MAX_SOLUTION_CHARS,
                                 "description": "The full solution text with the code block."}},
     "required": ["solution"], "additionalProperties": False},
)


def render_prompt(problem: Problem) -> str:
    """The problem as an agent sees it (no reference, no test inputs)."""
    return (
        f"# {problem.title}\n\n"
        f"Theoretical-physics problem (level {problem.level} of 5, {problem.domain}).\n\n"
        f"## Problem\n{problem.statement.strip()}\n\n"
        f"## Answer requirements\n{problem.answer_requirements.strip()}\n\n"
        "## How to answer\n"
        "Derive the result, then give the final answer as Python code. Call `submit` once "
        "with your complete written solution; it must end with a single fenced code block "
        "(```python ... ```) that defines the function above with exactly that name and "
        "argument order. Only the last fenced Python block is run; it may import math, "
        "cmath, numpy, scipy and sympy, and must not read files or use the network. The "
        "function is called on hidden test inputs across the stated ranges, including edge "
        f"regimes, and compared with the expert's function (relative tolerance "
        f"{problem.rtol:g}, absolute tolerance {problem.atol:g}). One submission ends the "
        "episode.\n"
    )


class TPBenchEpisode(Episode):
    """One attempt (seed = attempt index) at one problem."""

    def __init__(self, problem: Problem, *, seed: int = 0,
                 options: dict[str, Any] | None = None,
                 compare_limit_s: float | None = None) -> None:
        super().__init__(suite="tpbench", task_id=problem.id, seed=seed, options=options)
        self._problem = problem
        # the symbolic comparison's limit (None: compare.TIME_LIMIT_S); the audit's
        # attacks pass a shorter one to keep their runs short
        self._compare_limit_s = compare_limit_s
        self._verification: Verification | None = None
        self._holistic: dict[str, Any] = {"holistic_grade": None}
        self._prompt = render_prompt(problem)
        self._submissions = self._add_budget(Budget("submissions", 1))  # one ends the episode
        self._add_tool(SUBMIT_SPEC, self._submit)

    @property
    def prompt(self) -> str:
        return self._prompt

    def workspace(self) -> dict[str, Any]:
        return {"function_name": self._problem.function,
                "argument_names": [a.name for a in self._problem.arguments]}

    def _submit(self, args: dict[str, Any]) -> ToolResult:
        solution = args["solution"]
        if not solution.strip():
            raise ToolInputError("The solution is empty. Submit the full written solution "
                                 "ending with a ```python code block. Nothing was charged.")
        self._submissions.charge(1)
        self._finish(solution)
        return ToolResult("Solution received; the episode has ended. It will be verified by "
                          "running your code on hidden test inputs.",
                          data={"received_chars": len(solution)})

    def calibration_problem(self) -> Problem:
        """The full problem with its reference, for privileged calibration agents only
        (the runner hands those the episode itself and flags their records)."""
        return self._problem

    def verification(self) -> Verification:
        """The verdict on the submitted solution (computed once)."""
        if self._verification is None:
            self._verification = verify(self._problem, str(self._answer),
                                        compare_limit_s=self._compare_limit_s)
        return self._verification

    def grader_prompt(self) -> str | None:
        """The holistic-grading prompt (the statement, the expert solution, the
        verification verdict and the submitted solution), once a solution is in."""
        if not self.answered:
            return None
        p = self._problem
        return holistic_prompt(str(self._answer), statement=p.statement,
                               expert_solution=p.solution, verdict=self.verification().verdict)

    def record_grade(self, reply: str, grader: str) -> None:
        grade = parse_holistic_grade(reply)
        self._holistic = {"holistic_grade": grade, "holistic_grader": grader}
        if grade is None:
            self._holistic["holistic_grade_error"] = ("the grader's reply names no grade "
                                                      f"A-D: {reply[-200:]!r}")

    def _score(self, answer: Any) -> Score:
        v = self.verification()
        details = self._problem_details()
        details.update({"verdict": v.verdict, "verification": v.to_dict(),
                        "isolation": v.isolation, **self._holistic})
        return Score(passed=v.correct, score=float(v.correct), metric="verdict",
                     value=float(v.n_passed) / v.n_tests if v.n_tests else 0.0,
                     threshold=1.0, truth=None, error=v.error, details=details)

    def _problem_details(self) -> dict[str, Any]:
        p = self._problem
        return {"problem_version": p.version, "problem_key": p.key, "level": p.level,
                "domain": p.domain, "title": p.title}

    def _metric_name(self) -> str:
        return "verdict"

    def _extend_record(self, record: EpisodeRecord) -> None:
        if not self.answered:
            record.details.update(self._problem_details())
            record.details["verdict"] = "no_answer"
