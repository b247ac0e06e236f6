"""Scripted baseline agents for the stargazer suite (radial-velocity planet discovery).

- `classical`: generalised Lomb-Scargle periodograms of the residuals, multi-start
  Keplerian least squares, planets added greedily while the BIC drops, alias checks;
  then submissions in order of the BIC ranking, using the per-criterion feedback.
- `nested`: the same candidate periods, then Bayesian model comparison over the planet
  count by nested sampling (dynesty), and the chosen model's maximum-likelihood fit.

Both use only the episode view: the workspace data and the `submit` / `end` tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .stargazer_fit import Fit, RVData, SearchSettings, greedy_search, select_by_bic

AGENTS = {
    "classical": "discoverygym.agents.stargazer:ClassicalAgent",
    "nested": "discoverygym.agents.stargazer:NestedSamplingAgent",
    # privileged calibration agent of the suite (submits the hidden truth)
    "oracle": "discoverygym.suites.stargazer.oracle:Oracle",
}


def search_settings(workspace: dict[str, Any], data: RVData) -> SearchSettings:
    """Search settings for a task: periods from 1 day (0.5 day for real data, which may
    hold ultra-short periods and nightly aliases) to the longer of 1000 days and three
    baselines; at most the task's planet limit."""
    limits = workspace.get("limits", {})
    real = workspace.get("tier") == "real"
    p_max = max(1000.0, 3.0 * data.baseline_days)
    return SearchSettings(period_range=(0.5 if real else 1.0, p_max),
                          max_planets=int(limits.get("max_planets", 8)),
                          daily_aliases=real)


def submission_order(fits: Sequence[Fit], n_points: int, delta_bic: float) -> list[int]:
    """Planet counts to submit, in order: the BIC-selected count first, then the other
    counts (at least one planet) by ascending BIC."""
    chosen = max(select_by_bic(fits, n_points, delta_bic), 1)
    rest = sorted((k for k in range(1, len(fits)) if k != chosen),
                  key=lambda k: fits[k].bic(n_points))
    return [chosen, *rest]


def submit_in_order(view: Any, data: RVData, fits: Sequence[Fit], order: Sequence[int]) -> None:
    """Submit fits in the given order of planet counts until one passes or the
    submissions run out. When the count criterion passes but another fails, the count is
    right: later submissions keep that count. Ends the episode when nothing is left."""
    tried: set[int] = set()
    queue = list(order)
    while queue and not view.done:
        k = queue.pop(0)
        if k in tried or k >= len(fits):
            continue
        tried.add(k)
        result = view.call("submit", fits[k].submission(data))
        if result.is_error:
            continue
        info = result.data or {}
        if info.get("passed") or not info.get("submissions_left", 1):
            break
        criteria = info.get("criteria", {})
        if criteria.get("count"):
            break  # right count, no better alternative with this count to offer
    if not view.done:
        view.call("end", {})


class ClassicalAgent:
    """Periodogram + Keplerian least squares + BIC-gated greedy planet addition."""

    delta_bic = 10.0

    def solve(self, view: Any) -> None:
        workspace = view.workspace()
        data = RVData.from_workspace(workspace)
        settings = search_settings(workspace, data)
        settings.delta_bic = self.delta_bic
        fits = greedy_search(data, settings)
        if len(fits) < 2:
            view.call("end", {})
            return
        order = submission_order(fits, data.n, self.delta_bic)
        submit_in_order(view, data, fits, order)


class NestedSamplingAgent(ClassicalAgent):
    """Placeholder until the nested sampler lands (same as classical)."""
