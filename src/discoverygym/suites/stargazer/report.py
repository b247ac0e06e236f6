"""Report plots for `discoverygym report`: per episode, the data (offset-corrected, one
colour per instrument) with the best submitted and the true RV curves, and residuals.

Runs after a run, for humans only: the truth curve is recomputed from the task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...core.escape import for_html
from ...physics.rv_kepler import rv_total
from .task import RVTask

MAX_PLOTTED = 12
GRID_POINTS = 2000


def _offsets(task: RVTask, model: np.ndarray, jitter: np.ndarray) -> np.ndarray:
    """Per-epoch WLS instrument offsets of the data about a model (as the evaluator)."""
    labels = task.labels
    index = np.array([labels.index(x) for x in task.instrument])
    w = 1.0 / (task.err_ms ** 2 + jitter[index] ** 2)
    resid = task.rv_ms - model
    num = np.bincount(index, w * resid, len(labels))
    den = np.bincount(index, w, len(labels))
    return (num / den)[index]


def episode_figure(task: RVTask, planets: np.ndarray | None, jitter: np.ndarray | None,
                   title: str) -> str:
    """One episode's figure as an inline <img> (data, best submission, truth, residuals)."""
    from ...report.figures import figure_html, new_figure

    fig, ax0 = new_figure(7.0, 4.4)
    ax0.remove()
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    t, t0 = task.times_days, task.t_ref_days
    grid = np.linspace(t.min(), t.max(), GRID_POINTS)
    jit = np.zeros(len(task.labels)) if jitter is None else jitter
    have_guess = planets is not None and len(planets) > 0
    model = rv_total(t, planets, t0) if have_guess else np.zeros(t.size)
    # the data are shown about the best submission's fitted offsets (about the truth's
    # offsets when nothing was submitted)
    ref_model = model if have_guess else rv_total(t, task.truth, t0)
    corrected = task.rv_ms - _offsets(task, ref_model, jit)
    for lab in task.labels:
        sel = task.instrument == lab
        top.errorbar(t[sel], corrected[sel], yerr=task.err_ms[sel], fmt="o", ms=3, lw=0.8,
                     label=lab)
        if have_guess:
            bottom.errorbar(t[sel], (corrected - model)[sel], yerr=task.err_ms[sel], fmt="o",
                            ms=3, lw=0.8)
    top.plot(grid, rv_total(grid, task.truth, t0), color="0.35", lw=1.0, ls="--",
             label="truth")
    if have_guess:
        top.plot(grid, rv_total(grid, planets, t0), color="#c44e52", lw=1.0,
                 label="best submission")
    bottom.axhline(0.0, color="0.5", lw=0.8)
    top.set_ylabel("RV (m/s)")
    bottom.set_ylabel("resid.")
    bottom.set_xlabel("time (days)")
    top.set_title(title, fontsize=9)
    top.legend(fontsize=7, ncol=4, loc="upper right")
    return figure_html(fig, title)


def report_sections(records: list[dict[str, Any]],
                    load_task: Callable[..., RVTask]) -> list[tuple[str, str]]:
    """The suite's report sections (the first MAX_PLOTTED episodes are plotted)."""
    parts = []
    for r in records[:MAX_PLOTTED]:
        details = r.get("details") or {}
        options = {k: v for k, v in (r.get("options") or {}).items() if k == "tasks_from"}
        try:
            task = load_task(r["task_id"], **options)
        except Exception as exc:  # a task that cannot be rebuilt: say so, plot the rest
            parts.append(f"<p>{for_html(r.get('task_id'))}: not plotted ({for_html(exc)})</p>")
            continue
        planets = details.get("best_planets")
        jitter = details.get("best_jitter_ms")
        verdict = "passed" if r.get("passed") else "not passed"
        title = (f"{r['task_id']} · {r.get('agent') or r.get('model')} · {verdict} "
                 f"({details.get('mode', '?')}) · {details.get('n_found', 0)} planets found, "
                 f"{details.get('n_true', task.truth.shape[0])} true")
        parts.append(episode_figure(
            task, None if planets is None else np.asarray(planets, dtype=float).reshape(-1, 5),
            None if jitter is None else np.asarray(jitter, dtype=float), title))
    note = ""
    if len(records) > MAX_PLOTTED:
        note = f"<p>First {MAX_PLOTTED} of {len(records)} episodes.</p>"
    if not parts:
        return []
    return [("RV data, best submission and truth", note + "\n".join(parts))]
