"""Trivial agents for calibration (`discoverygym calibrate gravity`): they answer
without observing, so a task one of them passes gives its answer away.

- `constant`: one plausible value per answer unit, the scale of a binary of two Sun-like
  stars one AU apart on a circular orbit (e.g. 1 Msun for a mass, 1 AU for a length,
  one year for a time); `true` for a yes/no question; 0.5 for a dimensionless number.
  The values are physics priors, not taken from the suite's worlds.
- `window-guess`: reads the observation window from the workspace and answers as if it
  held ten orbits, Gravity-Bench-v1's choice for its Newtonian worlds: the period is
  window / 10, and the quantities that follow from the period alone come with it
  (multiply_mass_period, the path travel times at uniform speed); anything else as
  `constant`. It passes only where the window gives the period away.
- `no-answer`: ends without submitting (an episode without an answer fails).
"""

from __future__ import annotations

import math

from ....core import EpisodeView

# The reference binary of the constant guesses: two 1-Msun stars, 1 AU apart, circular.
_G = 6.674e-11  # m^3 kg^-1 s^-2, as the prompt states
_MSUN_KG = 1.989e30
_AU_M = 1.496e11
_TOTAL_KG = 2 * _MSUN_KG
_PERIOD_S = 2 * math.pi * math.sqrt(_AU_M**3 / (_G * _TOTAL_KG))
_SPEED_MS = math.sqrt(_G * _TOTAL_KG / _AU_M) / 2  # each star about the barycentre
_GUESS_BY_UNIT: dict[str, float] = {
    "kg": _MSUN_KG,
    "m": _AU_M,
    "s": _PERIOD_S,
    "m/s": _SPEED_MS,
    "m/s^2": _G * _MSUN_KG / _AU_M**2,
    "rad/s": 2 * math.pi / _PERIOD_S,
    "m^2/s": math.pi * _AU_M**2 / _PERIOD_S,
    "m^2": math.pi * (_AU_M / 2) ** 2,
    "kg m/s": _MSUN_KG * _SPEED_MS,
    "J": -_G * _MSUN_KG**2 / (2 * _AU_M),
    "": 0.5,
}
TEN_ORBITS = 10
DAYS_21_S = 21 * 86400.0


def constant_answer(task: dict) -> float | bool:
    """The constant guess for a task as the workspace describes it (id, answer type and
    SI unit)."""
    if task.get("answer_type") == "boolean":
        return True
    unit = str(task.get("answer_unit", ""))
    if unit not in _GUESS_BY_UNIT:
        raise ValueError(f"no constant guess for the unit {unit!r}")
    return _GUESS_BY_UNIT[unit]


def window_answer(task: dict, window_s: float) -> float | bool:
    """The guess that the window holds ten orbits (see the module docstring)."""
    period_s = window_s / TEN_ORBITS
    task_id = str(task.get("id"))
    if task_id == "period":
        return period_s
    if task_id == "multiply_mass_period":
        return (period_s / DAYS_21_S) ** 2
    if task_id.startswith("travel_time_") and task_id.endswith("pct_path"):
        return float(task_id.split("_")[2].removesuffix("pct")) / 100 * period_s
    return constant_answer(task)


def _submit(view: EpisodeView, value: float | bool) -> None:
    view.call("submit", {"answer": value if isinstance(value, bool) else float(value)})


class ConstantGuess:
    """Submits `constant_answer` without observing."""

    def solve(self, view: EpisodeView) -> None:
        _submit(view, constant_answer(view.workspace()["task"]))


class WindowGuess:
    """Submits `window_answer` without observing."""

    def solve(self, view: EpisodeView) -> None:
        ws = view.workspace()
        window_s = (float(ws["window"][1]) - float(ws["window"][0])) \
            * float(ws["units"]["time_to_s"])
        _submit(view, window_answer(ws["task"], window_s))


class NoAnswer:
    """Looks at nothing and submits nothing."""

    def solve(self, view: EpisodeView) -> None:
        view.workspace()
