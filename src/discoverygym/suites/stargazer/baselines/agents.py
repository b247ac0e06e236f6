"""Scripted baseline agents for the stargazer suite (radial-velocity planet discovery).

- `classical`: generalised Lomb-Scargle periodograms of the residuals, a linear Keplerian
  scan and Keplerian least squares, planets added greedily while the BIC drops, alias
  and harmonic checks; then submissions in order of the BIC ranking, using the
  per-criterion feedback (stargazer_fit).
- `nested`: the same greedy search proposes the periods; the planet count is chosen by
  Bayesian model comparison with nested sampling (dynesty), and the chosen model's
  maximum-likelihood fit is submitted first (stargazer_nested).

Both use only the episode view: the workspace data and the `submit` / `end` tools. The
only randomness (the nested sampler's) comes from a generator seeded from the data."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ....physics.rv_fit import (
    Fit,
    RVData,
    SearchSettings,
    add_planet,
    alternative_fits,
    greedy_search,
    select_by_bic,
)
from .nested import LN_Z_GAIN, evidence, select_count


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


def bic_order(fits: Sequence[Fit], n_points: int, chosen: int) -> list[int]:
    """Planet counts to submit, in order: the chosen count first (at least one planet),
    then the other counts by ascending BIC."""
    chosen = max(chosen, 1)
    rest = sorted((k for k in range(1, len(fits)) if k != chosen),
                  key=lambda k: fits[k].bic(n_points))
    return [chosen, *rest]


class Submitter:
    """Submits fits in order of planet count and uses the feedback: when a submission
    gets the count right but fails another criterion, the count is kept and the other
    models with that count (aliases, harmonics, runner-ups) are tried, most likely first;
    when the count is wrong, the next count in the ranking is tried, and when every
    count fitted so far was wrong, more planets are added. Ends the episode when
    nothing is left to try. `log` keeps (arguments, criteria) per submission."""

    def __init__(self, view: Any, data: RVData, settings: SearchSettings) -> None:
        self.view, self.data, self.settings = view, data, settings
        self.log: list[tuple[dict[str, Any], dict[str, bool]]] = []

    def submit(self, fit: Fit) -> dict[str, Any] | None:
        args = fit.submission(self.data)
        result = self.view.call("submit", args)
        if result.is_error:
            return None
        info = result.data or {}
        self.log.append((args, dict(info.get("criteria", {}))))
        return info

    def run(self, fits: Sequence[Fit], order: Sequence[int]) -> None:
        fits = list(fits)
        count_seen = False
        for k in order:
            if self.view.done or k < 1 or k >= len(fits):
                continue
            count_seen = self.judge(fits[k])
            if count_seen or self.view.done:
                break
        # every count tried was wrong: the system has more planets than the models so
        # far, so keep adding planets (past the BIC gate) while submissions remain
        while (not count_seen and not self.view.done
               and len(fits) - 1 < self.settings.max_planets
               and add_planet(self.data, fits, self.settings)):
            count_seen = self.judge(fits[-1])
        if not self.view.done:
            self.view.call("end", {})

    def judge(self, fit: Fit) -> bool:
        """Submit a fit; when its count is right but its planets are not, try the other
        models with that count. True when the count was right (or the task passed)."""
        info = self.submit(fit)
        if info is None:
            return False
        if info.get("passed"):
            return True
        criteria = info.get("criteria", {})
        if criteria.get("count"):
            if not criteria.get("match"):
                self.try_alternatives(fit)
            return True
        return False

    def try_alternatives(self, fit: Fit) -> None:
        for alt in alternative_fits(self.data, fit, self.settings):
            if self.view.done:
                return
            info = self.submit(alt)
            if info is not None and info.get("passed"):
                return


class ClassicalAgent:
    """Periodogram + Keplerian least squares + BIC-gated greedy planet addition."""

    delta_bic = 10.0

    def solve(self, view: Any) -> None:
        workspace = view.workspace()
        data = RVData.from_workspace(workspace)
        settings = search_settings(workspace, data)
        settings.delta_bic = self.delta_bic
        settings.extra_planets = 0  # one model beyond the BIC choice, as a fallback
        fits = greedy_search(data, settings)
        self.submitter = Submitter(view, data, settings)
        if len(fits) < 2:
            view.call("end", {})
            return
        chosen = select_by_bic(fits, data.n, self.delta_bic)
        self.submitter.run(fits, bic_order(fits, data.n, chosen))


def data_seed(data: RVData) -> int:
    """A seed derived from the data themselves (same data, same seed)."""
    digest = hashlib.sha256(np.ascontiguousarray(data.rv_ms).tobytes()
                            + np.ascontiguousarray(data.t_days).tobytes()).digest()
    return int.from_bytes(digest[:8], "little")


class NestedSamplingAgent:
    """Planet count by nested-sampling evidence (dynesty), periods proposed by the
    greedy periodogram search (which stops one planet past its BIC choice, so the
    evidence can pick at most one more planet than the BIC, and at most `max_planets`);
    evidences are computed for 0, 1, 2, ... planets until a planet no longer raises ln Z
    by LN_Z_GAIN. Submits the chosen model's best fit, then the other counts by
    evidence, with the same use of the feedback as `classical`."""

    max_planets = 4      # largest model whose evidence is computed
    nlive = 60
    maxcall = 8_000      # likelihood calls per model

    def solve(self, view: Any) -> None:
        workspace = view.workspace()
        data = RVData.from_workspace(workspace)
        settings = search_settings(workspace, data)
        settings.delta_bic = ClassicalAgent.delta_bic  # the search only proposes periods
        settings.max_planets = min(settings.max_planets, self.max_planets)
        settings.extra_planets = 0
        greedy = greedy_search(data, settings)
        rng = np.random.default_rng(data_seed(data))
        self.evidences = []
        for k, fit in enumerate(greedy):
            ev = evidence(data, fit.planets, settings.period_range, rng, nlive=self.nlive,
                          maxcall=self.maxcall)
            if k and greedy[k].log_likelihood > ev.fit.log_likelihood:
                ev.fit = greedy[k]  # keep the better of the two maximum-likelihood fits
            ev.fit.tags.setdefault("alternatives", greedy[k].tags.get("alternatives", []))
            self.evidences.append(ev)
            if k and ev.ln_z - self.evidences[k - 1].ln_z <= LN_Z_GAIN:
                break  # the count is settled: larger models are not needed
        fits = [ev.fit for ev in self.evidences]
        self.submitter = Submitter(view, data, settings)
        if len(fits) < 2:
            view.call("end", {})
            return
        chosen = max(select_count(self.evidences), 1)
        rest = sorted((k for k in range(1, len(fits)) if k != chosen),
                      key=lambda k: -self.evidences[k].ln_z)
        self.submitter.run(fits, [chosen, *rest])
