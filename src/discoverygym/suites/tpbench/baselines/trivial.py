"""Trivial agents for calibration (`discoverygym calibrate tpbench`): they answer
without deriving anything, so a problem one of them passes does not test the physics.
Both read only the agent view (the workspace names the function and its arguments).

- `constant`: a function with the required name and arguments that returns 1.0
  whatever it is given;
- `no-answer`: ends without submitting.
"""

from __future__ import annotations

from ....core import EpisodeView

AGENTS = {
    "constant": "discoverygym.suites.tpbench.baselines.trivial:ConstantFunction",
    "no-answer": "discoverygym.suites.tpbench.baselines.trivial:NoAnswer",
}


def constant_solution(function_name: str, argument_names: list[str],
                      value: float = 1.0) -> str:
    """A written 'solution' whose code block returns `value` for any arguments."""
    args = ", ".join(argument_names)
    return (f"Without a derivation, the answer is taken to be the constant {value!r}.\n\n"
            f"```python\ndef {function_name}({args}):\n    return {value!r}\n```\n")


class ConstantFunction:
    """Submits `constant_solution` for the required signature."""

    def solve(self, view: EpisodeView) -> None:
        ws = view.workspace()
        view.call("submit", {"solution": constant_solution(str(ws["function_name"]),
                                                           list(ws["argument_names"]))})


class NoAnswer:
    """Submits nothing."""

    def solve(self, view: EpisodeView) -> None:
        view.workspace()
