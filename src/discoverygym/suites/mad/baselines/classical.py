"""Scripted baselines of the mad suite (classical world). They use only the episode
view: the prompt's facts (`world_facts` in the workspace), the tools, and what their
own measurements return. None of them reads the truth.

- `last-seen`: measure every particle once at T_max; predict those positions for all
  query times.
- `ballistic`: measure every particle at T_max - 0.1 and T_max; move each particle at
  the measured constant velocity, reflecting off the walls.
- `newtonian`: assume Newtonian gravity and inertia. Measure every particle at several
  times over the last few time units before T_max (the best fidelity that still buys
  at least four snapshots), fit positions, velocities at T_max and masses in one
  linear least-squares problem (with G = 1 the accelerations are linear in the
  masses), then integrate Newtonian gravity with collisions forward to the query times.

Under the default `discovery` protocol the question is a fresh preparation (exact
positions, velocities, masses and radii of new spheres at t = 0) revealed with the query
times. No measurement tells these agents anything about it, so they buy none: `last-seen`
holds the prepared positions, `ballistic` moves them at the prepared velocities with wall
reflections, `newtonian` integrates the preparation with Newtonian gravity and inertia.

In the in-context-learning variant each agent plays every trial the same way. In the
parameter-inference variant they have no model of the altered law: they end the
measurements at once and submit the median of the candidate values (a prior-only
reference). They need numbers, so they refuse the visual variant with a clear error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core import EpisodeView
from ..classical_fit import fit_newtonian, inverse_square_kernel  # noqa: F401 - public here too
from .fluid_quantum import TrialBaseline, require_world

FIDELITY_COST = {"high": 10.0, "medium": 5.0, "low": 2.0}
FIDELITY_SIGMA = {"high": 0.001, "medium": 0.01, "low": 0.1}


def measure_all(view: EpisodeView, t: float, fidelity: str) -> np.ndarray:
    """Measure every particle at time t; returns positions (N, D). Raises if refused."""
    facts = view.workspace()["world_facts"]
    result = view.call("measure", {"t": float(t), "what": list(range(facts["n_particles"])),
                                   "fidelity": fidelity})
    if result.is_error:
        raise RuntimeError(result.text)
    if "values" not in result.data:
        raise RuntimeError("this baseline needs numeric measurements; the visual variant "
                           "returns pictures")
    return np.asarray(result.data["values"], dtype=float)


def snapshots_affordable(budget: float, n_particles: int, fidelity: str) -> int:
    """How many all-particle measurements the budget pays for at this fidelity."""
    return int(budget // (FIDELITY_COST[fidelity] * n_particles))


def best_fidelity(budget: float, n_particles: int, min_snapshots: int) -> str:
    """The most precise fidelity that buys at least `min_snapshots` all-particle
    measurements (low if none does)."""
    for fidelity in ("high", "medium", "low"):
        if snapshots_affordable(budget, n_particles, fidelity) >= min_snapshots:
            return fidelity
    return "low"


def end_and_get_queries(view: EpisodeView) -> list[float]:
    """End the measurement phase (if still open) and return the query times."""
    if view.workspace()["phase"] == "measure":
        result = view.call("end_measurements", {})
        if result.is_error:
            raise RuntimeError(result.text)
    return [float(q["t"]) for q in view.workspace()["queries"]]


def reflect_into_box(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Fold free-flight positions back into [lo, hi] as mirror reflections would."""
    width = hi - lo
    phase = np.mod(x - lo, 2 * width)
    return lo + np.where(phase > width, 2 * width - phase, phase)


def asks_preparation(view: EpisodeView) -> bool:
    """Whether the questions will be about a fresh preparation (discovery protocol)."""
    return view.workspace()["world_facts"].get("protocol") == "discovery"


def end_and_get_preparation(view: EpisodeView) -> tuple[list[float], dict[str, np.ndarray]]:
    """End the measurement phase; return the query times and the preparation (x, v,
    mass, radius as arrays)."""
    times = end_and_get_queries(view)
    prep = view.workspace()["preparation"]
    return times, {k: np.asarray(prep[k], dtype=float) for k in ("x", "v", "mass", "radius")}


def submit_prior_median(view: EpisodeView) -> None:
    """Parameter inference without a model: the median of the candidate values."""
    candidates = view.workspace()["parameter"]["candidates"]
    if view.workspace()["phase"] == "measure":
        view.call("end_measurements", {})
    view.call("submit_estimate", {"value": float(np.median(candidates))})


class Baseline(TrialBaseline):
    """A classical baseline: plays each trial with `play_trial` (one measurement phase
    and one prediction); answers the parameter-inference variant with the prior."""

    world = "classical"

    def solve(self, view: EpisodeView) -> None:
        require_world(view, self.world)
        if "parameter" in view.workspace():
            submit_prior_median(view)
            return
        super().solve(view)

    def play_trial(self, view: EpisodeView) -> None:
        if not asks_preparation(view):
            self.play_own_future(view)
            return
        times, prep = end_and_get_preparation(view)
        facts = view.workspace()["world_facts"]
        predictions = self.predict_preparation(prep, times, facts)
        view.call("predict", {"predictions": np.asarray(predictions).tolist()})

    def play_own_future(self, view: EpisodeView) -> None:
        """The paper protocol: measure this world, predict its own future."""
        raise NotImplementedError

    def predict_preparation(self, prep: dict[str, np.ndarray], times: list[float],
                            facts: dict[str, Any]) -> np.ndarray:
        """Positions (len(times), N, D) of the preparation at the query times."""
        raise NotImplementedError


class LastSeen(Baseline):
    """Predict the last positions seen (measured, or prepared) for every query time."""

    def predict_preparation(self, prep: dict[str, np.ndarray], times: list[float],
                            facts: dict[str, Any]) -> np.ndarray:
        return np.stack([prep["x"]] * len(times))

    def play_own_future(self, view: EpisodeView) -> None:
        ws = view.workspace()
        facts = ws["world_facts"]
        fidelity = best_fidelity(ws["budget_remaining"], facts["n_particles"], 1)
        positions = measure_all(view, facts["t_max"], fidelity)
        times = end_and_get_queries(view)
        view.call("predict", {"predictions": [positions.tolist()] * len(times)})


class Ballistic(Baseline):
    """Constant velocity from two close measurements, with wall reflections."""

    gap = 0.1

    def predict_preparation(self, prep: dict[str, np.ndarray], times: list[float],
                            facts: dict[str, Any]) -> np.ndarray:
        radius = prep["radius"][:, None]
        lo, hi = -facts["box_half_width"] + radius, facts["box_half_width"] - radius
        return np.stack([reflect_into_box(prep["x"] + prep["v"] * t, lo, hi) for t in times])

    def play_own_future(self, view: EpisodeView) -> None:
        ws = view.workspace()
        facts = ws["world_facts"]
        t_max = facts["t_max"]
        fidelity = best_fidelity(ws["budget_remaining"], facts["n_particles"], 2)
        before = measure_all(view, t_max - self.gap, fidelity)
        last = measure_all(view, t_max, fidelity)
        velocity = (last - before) / self.gap
        times = end_and_get_queries(view)
        radius = np.asarray(facts["radii"])[:, None]
        lo, hi = -facts["box_half_width"] + radius, facts["box_half_width"] - radius
        predictions = [reflect_into_box(last + velocity * (t - t_max), lo, hi).tolist()
                       for t in times]
        view.call("predict", {"predictions": predictions})


class Newtonian(Baseline):
    """Fit Newtonian gravity to the last few time units, integrate it forward."""

    window = 3.0  # time units before T_max over which to measure
    min_snapshots = 4

    def predict_preparation(self, prep: dict[str, np.ndarray], times: list[float],
                            facts: dict[str, Any]) -> np.ndarray:
        from .. import classical_physics as P

        return np.asarray(self.integrate(P, prep["x"], prep["v"], prep["mass"],
                                         prep["radius"], 0.0, times, facts["dt"]))

    def play_own_future(self, view: EpisodeView) -> None:
        from .. import classical_physics as P  # the integrator only, no truth

        ws = view.workspace()
        facts = ws["world_facts"]
        n, t_max = facts["n_particles"], facts["t_max"]
        fidelity = best_fidelity(ws["budget_remaining"], n, self.min_snapshots)
        k = max(2, min(8, snapshots_affordable(ws["budget_remaining"], n, fidelity)))
        times = self.sample_times(t_max, k)
        positions = np.stack([measure_all(view, t, fidelity) for t in times])
        query_times = end_and_get_queries(view)
        x_end, v_end, masses = fit_newtonian(times, positions, FIDELITY_SIGMA[fidelity],
                                             tuple(facts["mass_range"]))
        predictions = self.integrate(P, x_end, v_end, masses, np.asarray(facts["radii"]),
                                     t_max, query_times, facts["dt"])
        view.call("predict", {"predictions": predictions})

    def sample_times(self, t_max: float, k: int) -> np.ndarray:
        # Spread over the window, plus a close pair at the end for the final velocity.
        early = np.linspace(t_max - self.window, t_max - 0.05, k - 1)
        return np.round(np.append(early, t_max), 3)

    @staticmethod
    def integrate(P: Any, x: np.ndarray, v: np.ndarray, masses: np.ndarray,
                  radii: np.ndarray, t_start: float, query_times: list[float], dt: float
                  ) -> list[list[list[float]]]:
        with P.x64():
            return P.integrator_for("normal").positions_after(
                P.as_state(x, v), P.as_bodies(masses, radii),
                [int(round(t / dt)) for t in query_times],
                start=int(round(t_start / dt))).tolist()


