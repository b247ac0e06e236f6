"""Scripted expert agents for the gravity suite (Gravity-Bench-v1 family).

They learn the task only from what an agent sees (the workspace's `task`, `units`,
`window`, `G_SI`, `budget`, and the `observe` / `submit` tools), convert the
display units to SI themselves and submit SI answers.

- `expert-full`: the classical expert solution on the full table `df`.
- `expert-uniform`: the budget spent on equally spaced times, then the same solution.
- `expert-adaptive`: a coarse irregular pass, a Keplerian fit, then the rest of the
  budget where the task needs it (periastron and apoastron zooms, tight clusters for
  velocities and accelerations); answers come from the fitted model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ....core import EpisodeView
from . import planning as plan
from .answers import answer
from .kepler_model import ModelSolution
from .measurements import POSITION_COLUMNS, Track, track_from_table
from .numeric import NumericSolution

# Tasks whose answer needs velocities along the whole window (drag, conservation).
ANGULAR_MOMENTUM_TASKS = {"linear_drag", "virial_theorem"}
# Tasks whose answer needs accelerations at very different separations (force law).
FORCE_LAW_TASKS = {"modified_gravity_power_law", "kepler_3rd_law"}
# Tasks the cluster estimates answer even where no fixed conic fits the track.
CLUSTER_ONLY_TASKS = ANGULAR_MOMENTUM_TASKS | FORCE_LAW_TASKS
COARSE_COUNT = 40
CLUSTER_COUNT = 6
CLUSTER_SIZE = 5
# Cluster spacing as a fraction of the local orbital timescale r^2 / h: wide enough
# that position errors of ~1e-6 barely reach the derivatives, tight enough that a
# quartic through five points is exact to ~1e-5.
CLUSTER_SPACING = 0.03
ZOOM_COUNT = 10


@dataclass(frozen=True)
class Briefing:
    """What the workspace tells an agent about its episode."""

    task_id: str
    boolean: bool
    units: dict[str, Any]
    window: tuple[float, float]
    gravitational_constant: float
    table: pd.DataFrame | None  # full-obs only
    budget: dict[str, int] | None  # budget-obs only

    @property
    def per_call(self) -> int:
        return int(self.budget["per_call"]) if self.budget else 10


def read_briefing(view: EpisodeView) -> Briefing:
    """Read the task, units, window, G and protocol from the view's workspace."""
    ws = view.workspace()
    task = ws["task"]
    return Briefing(
        task_id=str(task["id"]),
        boolean=task.get("answer_type") == "boolean",
        units=dict(ws["units"]),
        window=(float(ws["window"][0]), float(ws["window"][1])),
        gravitational_constant=float(ws["G_SI"]),
        table=ws.get("df"),
        budget=dict(ws["budget"]) if ws.get("budget") is not None else None,
    )


def observe(view: EpisodeView, times: np.ndarray, per_call: int) -> int:
    """Observe the given display times in calls of at most `per_call`; returns how many
    were taken (stops at the first refused call)."""
    taken = 0
    for batch in plan.batches(times, per_call):
        result = view.call("observe", {"times": batch})
        if result.is_error:
            break
        taken += len(batch)
    return taken


def observed_track(view: EpisodeView, briefing: Briefing) -> Track:
    return track_from_table(view.workspace()["observations"], briefing.units)


def submit(view: EpisodeView, briefing: Briefing, value: float | bool) -> None:
    if briefing.boolean:
        view.call("submit", {"answer": bool(value)})
    else:
        view.call("submit", {"answer": float(value)})


class ExpertFull:
    """The expert solution on the full dense table (full-obs); on a budget it spends
    everything on equally spaced times like `expert-uniform`."""

    def solve(self, view: EpisodeView) -> None:
        briefing = read_briefing(view)
        if briefing.table is not None:
            track = track_from_table(briefing.table, briefing.units)
        else:
            observe(view, plan.uniform_times(briefing.window, briefing.budget["remaining"]),
                    briefing.per_call)
            track = observed_track(view, briefing)
        solution = NumericSolution(track, briefing.gravitational_constant)
        submit(view, briefing, answer(briefing.task_id, solution))


class ExpertUniform(ExpertFull):
    """N observations equally spaced over the window (N = the whole budget), then the
    expert solution (published as "expert-ref-100")."""


class ExpertAdaptive:
    """Coarse pass, Keplerian fit, then observations where the task needs precision."""

    def solve(self, view: EpisodeView) -> None:
        briefing = read_briefing(view)
        if briefing.table is not None:
            ExpertFull().solve(view)
            return
        window = briefing.window
        coarse = plan.coarse_times(window, _coarse_count(briefing))
        observe(view, coarse, briefing.per_call)
        track = observed_track(view, briefing)
        first = _try_model(track, briefing)
        clusters, centres = self._clusters(briefing, track, first)
        extra = self._zooms(briefing, first) if not clusters else []
        remaining = view.workspace()["budget"]["remaining"]
        kept: list[np.ndarray] = []
        for times in clusters + extra:
            if len(times) > remaining:
                break
            remaining -= observe(view, times, briefing.per_call)
            kept.append(times)
        track = observed_track(view, briefing)
        rows = [_rows_of(track, briefing, np.concatenate([times, [centre]]))
                for times, centre in zip(kept[:len(clusters)], centres, strict=False)]
        try:
            solution: NumericSolution | ModelSolution = ModelSolution(
                track, briefing.gravitational_constant, clusters=rows)
            if solution.orbit is None and briefing.task_id not in CLUSTER_ONLY_TASKS:
                raise ValueError("no Keplerian orbit fits the observations")
            value = answer(briefing.task_id, solution)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            # The classical solution on whatever was observed is the fallback.
            solution = NumericSolution(track, briefing.gravitational_constant)
            value = answer(briefing.task_id, solution)
        submit(view, briefing, value)

    def _clusters(self, briefing: Briefing, track: Track,
                  model: ModelSolution | None) -> tuple[list[np.ndarray], list[float]]:
        """Tight groups of new times around chosen coarse samples (each sample is the
        middle of its group, returned as the second list), or ([], []) where the
        Keplerian model alone will do."""
        task = briefing.task_id
        t_disp = track.time_s / briefing.units["time_to_s"]
        sep = track.separation_m
        span = briefing.window[1] - briefing.window[0]
        unbound = model is not None and model.orbit is not None and not model.orbit.bound
        if task in ANGULAR_MOMENTUM_TASKS:
            # Slow, wide parts of the orbit spread over the whole window.
            segment = np.floor(CLUSTER_COUNT * (t_disp - briefing.window[0]) / span)
            picks = [int(np.flatnonzero(segment == k)[np.argmax(sep[segment == k])])
                     for k in range(CLUSTER_COUNT) if np.any(segment == k)]
        elif task in FORCE_LAW_TASKS:
            gap = span / (4 * CLUSTER_COUNT)
            half = CLUSTER_COUNT // 2
            close = plan.spread_picks(t_disp, -sep, half, gap)
            wide = plan.spread_picks(t_disp, sep, CLUSTER_COUNT - half, gap)
            # Alternate close and wide so that a small budget that affords only the first
            # few clusters still spans the range of separations.
            picks = [int(i) for pair in zip(close, wide, strict=False) for i in pair]
            picks += [int(i) for i in (list(close[len(wide):]) + list(wide[len(close):]))]
        elif unbound:
            picks = list(plan.spread_picks(t_disp, -sep, 2, span / 20))
        else:
            return [], []
        h = _angular_momentum_guess(model, track)
        centres = [float(t_disp[i]) for i in picks]
        groups = []
        for i in picks:
            timescale_disp = sep[i] ** 2 / h / briefing.units["time_to_s"]
            times = plan.cluster_times(t_disp[i], CLUSTER_SPACING * timescale_disp,
                                       CLUSTER_SIZE, briefing.window)
            groups.append(times[times != t_disp[i]])
        return groups, centres

    def _zooms(self, briefing: Briefing, model: ModelSolution | None) -> list[np.ndarray]:
        """Dense looks at one periastron and one apoastron passage (see
        `planning.passage_zooms`)."""
        if model is None or model.orbit is None or not model.orbit.bound:
            return []
        return plan.passage_zooms(model.orbit, briefing.window, briefing.units["time_to_s"],
                                  ZOOM_COUNT)


def _coarse_count(briefing: Briefing) -> int:
    """Size of the first pass: COARSE_COUNT, or less on a small budget for tasks that
    need observation clusters, so that at least half the budget is left for them."""
    remaining = int(briefing.budget["remaining"])
    if briefing.task_id in CLUSTER_ONLY_TASKS:
        cluster_cost = CLUSTER_COUNT * (CLUSTER_SIZE - 1)
        return min(COARSE_COUNT, max(remaining - cluster_cost, remaining // 2))
    return min(COARSE_COUNT, remaining)


def _try_model(track: Track, briefing: Briefing) -> ModelSolution | None:
    try:
        return ModelSolution(track, briefing.gravitational_constant)
    except (ValueError, FloatingPointError, np.linalg.LinAlgError):
        return None


def _angular_momentum_guess(model: ModelSolution | None, track: Track) -> float:
    """Specific angular momentum (m^2/s) from the first fit, or a crude one from the
    coarse samples where there is no usable fit."""
    if model is not None and model.orbit is not None:
        return float(np.sqrt(model.orbit.gm * model.orbit.semi_latus_rectum_m))
    rel = track.relative_m
    dt = np.diff(track.time_s)
    swept = np.linalg.norm(np.cross(rel[:-1], rel[1:]), axis=1)
    return float(np.max(swept / dt))


def _rows_of(track: Track, briefing: Briefing, times_disp: np.ndarray) -> np.ndarray:
    """Indices in `track` of rows observed at the given display times."""
    wanted = np.sort(np.asarray(times_disp, dtype=float)) * briefing.units["time_to_s"]
    idx = np.clip(np.searchsorted(track.time_s, wanted), 0, len(track) - 1)
    return np.unique(idx[np.isclose(track.time_s[idx], wanted, rtol=1e-12, atol=0)])


__all__ = ["ExpertAdaptive", "ExpertFull", "ExpertUniform", "POSITION_COLUMNS"]
