"""Trivial agents for calibration: they answer without looking at the data, so a task
one of them passes says nothing about RV analysis (its answer leaks or it is too easy).

- `no-planet`: claims the star has no planet. `submit` takes 1 to 8 planets, so the
  empty system is refused (free of charge) and the agent ends with no answer, which
  scores as a failure.
- `prompt-guess`: one plausible planet from what every task states (the prompt and the
  published priors), never from the RVs: the period and minimum mass at the geometric
  middle of the synthetic priors' log-uniform ranges (2-300 d: 24.5 d; 0.01-1 MJup:
  0.1 MJup, turned into K by `submit` with the star's mass), a circular orbit and phase 0.
"""

from __future__ import annotations

import math

from ....core import EpisodeView

GUESS_PERIOD_DAYS = math.sqrt(2.0 * 300.0)
GUESS_M_SIN_I_MJUP = math.sqrt(0.01 * 1.0)


class NoPlanetAgent:
    """Submits an empty planet list (refused: at least one planet), then ends."""

    def solve(self, view: EpisodeView) -> None:
        view.call("submit", {"planets": []})
        if not view.done:
            view.call("end", {})


class PromptGuessAgent:
    """Submits one planet guessed from the priors alone (see the module docstring)."""

    def solve(self, view: EpisodeView) -> None:
        guess = {"P_days": GUESS_PERIOD_DAYS, "m_sin_i_mjup": GUESS_M_SIN_I_MJUP, "e": 0.0,
                 "omega_rad": 0.0, "l_rad": 0.0}
        view.call("submit", {"planets": [guess]})
        if not view.done:
            view.call("end", {})
