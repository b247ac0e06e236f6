"""Plots of a gravity run for `discoverygym report` (for people after the run, never
shown to an agent): which moments each agent chose to observe, drawn on the true
separation curve of its world."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.escape import for_html
from .simulate import trajectory
from .worlds import get_world

MAX_EPISODES_PLOTTED = 12
SECTION_TITLE = "Observation times over the true separation"


def _world_of(record: dict[str, Any]):
    options = record.get("options") or {}
    if options.get("world_seed") is not None:
        return get_world(world_seed=int(options["world_seed"]))
    return get_world(record.get("world") or options.get("world"))


def _episode_figure(record: dict[str, Any]) -> str:
    """One episode: the separation |r2 - r1| over the window (display units) and a marker
    at every observed time (budget protocols), or the whole curve (full-obs)."""
    from ...report.figures import figure_html, new_figure

    world = _world_of(record)
    units = world.unit_system
    traj = trajectory(world)
    step = max(1, len(traj.times_s) // 4000)  # enough points for a 4-inch curve
    times_s = traj.times_s[::step]
    separation = np.linalg.norm(traj.positions_m[::step, 1] - traj.positions_m[::step, 0], axis=1)
    fig, ax = new_figure(4.4, 2.6)
    ax.plot(times_s / units.time_to_s, separation / units.length_to_m, lw=0.8, color="#8a8a8a")
    observed = (record.get("details") or {}).get("observed_times")
    if observed:
        t_obs = np.clip(np.asarray(observed, dtype=float) * units.time_to_s, 0.0,
                        traj.duration_s)
        pos = traj.positions_at(t_obs)
        sep_obs = np.linalg.norm(pos[:, 1] - pos[:, 0], axis=1)
        ax.plot(t_obs / units.time_to_s, sep_obs / units.length_to_m, "o", ms=3,
                color="#c62828" if not record.get("passed") else "#1a7f37")
        seen = f"{len(observed)} obs"
    else:
        seen = "full table" if record.get("protocol") == "full-obs" else "no observations"
    verdict = "pass" if record.get("passed") else "fail"
    title = f"{record.get('task_id')} · {world.id} · {seen} · {verdict}"
    ax.set_title(title, fontsize=8)
    ax.set_xlabel(f"time ({units.time})", fontsize=8)
    ax.set_ylabel(f"separation ({units.length})", fontsize=8)
    ax.tick_params(labelsize=7)
    return figure_html(fig, title)


def observation_sections(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The report section: up to MAX_EPISODES_PLOTTED episodes, failures first (where
    the observation plan matters most), one per task before any task repeats."""
    if not records:
        return []
    chosen = choose_episodes(records, MAX_EPISODES_PLOTTED)
    figures = []
    for record in chosen:
        try:
            figures.append(_episode_figure(record))
        except Exception as exc:  # one odd record must not hide the others
            figures.append(f"<p>{for_html(record.get('task_id'))}: "
                           f"{for_html(type(exc).__name__)}</p>")
    n_failed = sum(not r.get("passed") for r in records)
    intro = (f"<p>{len(chosen)} of {len(records)} episodes ({n_failed} failed), failures "
             "first, one per task before any task repeats. Grey: the true "
             "separation of the two stars over the observation window; dots: the times the "
             "agent observed (green if the episode passed, red if it failed).</p>")
    return [(SECTION_TITLE, intro + '<div class="plots">' + "".join(figures) + "</div>")]


def choose_episodes(records: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Up to `limit` records: failed before passed, and within each, a round over the
    tasks (in order of first appearance) before a task's second episode."""
    chosen: list[dict[str, Any]] = []
    for group in ([r for r in records if not r.get("passed")],
                  [r for r in records if r.get("passed")]):
        by_task: dict[str, list[dict[str, Any]]] = {}
        for r in group:
            by_task.setdefault(str(r.get("task_id")), []).append(r)
        rounds = max((len(v) for v in by_task.values()), default=0)
        for k in range(rounds):
            for episodes in by_task.values():
                if k < len(episodes) and len(chosen) < limit:
                    chosen.append(episodes[k])
    return chosen
