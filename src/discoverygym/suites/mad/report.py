"""Plots of a mad run for `discoverygym report` (for people, after the run; never shown
to an agent). Everything comes from the records: each record holds the agent's answer
and the truth at the query times, so nothing is recomputed.

- error per task (all worlds),
- classical: predicted vs true positions at the query times, one panel per episode
  (x-y plane; in 3D the projection onto it),
- any other world: predicted vs true values, one scatter per world,
- parameter inference: estimate vs truth."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

MAX_EPISODE_PANELS = 12  # keeps a report of hundreds of episodes small
COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def _predictions(record: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(predictions, truth) of a prediction record, or None when it has no answer or
    the two do not line up."""
    answer, truth = record.get("answer"), record.get("truth")
    if not isinstance(answer, dict) or "predictions" not in answer or truth is None:
        return None
    try:
        predicted = np.asarray(answer["predictions"], dtype=float)
        true = np.asarray(truth, dtype=float)
    except (TypeError, ValueError):
        return None
    if predicted.shape != true.shape or predicted.size == 0:
        return None
    return predicted, true


def error_by_task(records: list[dict[str, Any]]) -> tuple[str, str] | None:
    """A strip plot of every episode's error, one column per task."""
    from ...report.figures import figure_html, new_figure

    by_task: dict[str, list[float]] = defaultdict(list)
    metric = ""
    for r in records:
        if r.get("value") is not None:
            by_task[r["task_id"]].append(float(r["value"]))
            metric = metric or str(r.get("metric"))
    if not by_task:
        return None
    tasks = sorted(by_task)
    fig, ax = new_figure(max(4.0, 0.9 * len(tasks) + 2.0), 3.0)
    for i, task in enumerate(tasks):
        values = by_task[task]
        jitter = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else [0.0]
        ax.scatter(i + np.asarray(jitter), values, s=14, color="#4c72b0", alpha=0.7)
        ax.hlines(np.median(values), i - 0.3, i + 0.3, color="black")
    ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title("error per episode (bar: median)")
    return "Prediction error per task", figure_html(fig, f"{metric} per episode and task")


def classical_panels(records: list[dict[str, Any]]) -> tuple[str, str] | None:
    """Predicted vs true positions at the query times, one small panel per episode."""
    from ...report.figures import figure_html, new_figure

    by_task: dict[str, list[tuple[dict[str, Any], np.ndarray, np.ndarray]]] = defaultdict(list)
    for r in records:
        pair = _predictions(r) if r.get("world") == "classical" else None
        if pair is not None and pair[0].ndim == 3:
            by_task[r["task_id"]].append((r, *pair))
    # Round-robin over tasks, so every law shows up before the cap is reached.
    panels = []
    for rank in range(MAX_EPISODE_PANELS):
        for task in sorted(by_task):
            if rank < len(by_task[task]) and len(panels) < MAX_EPISODE_PANELS:
                panels.append(by_task[task][rank])
    if not panels:
        return None
    images = []
    for r, predicted, true in panels:
        fig, ax = new_figure(3.0, 3.0)
        half = 10.0
        ax.add_patch(_box_patch(half))
        for p in range(true.shape[1]):
            colour = COLOURS[p % len(COLOURS)]
            ax.plot(true[:, p, 0], true[:, p, 1], "o-", color=colour, ms=4, lw=0.8)
            ax.plot(predicted[:, p, 0], predicted[:, p, 1], "x--", color=colour, ms=5, lw=0.8)
        ax.set_xlim(-half * 1.05, half * 1.05)
        ax.set_ylim(-half * 1.05, half * 1.05)
        ax.set_aspect("equal")
        ax.tick_params(labelsize=6)
        value = r.get("value")
        ax.set_title(f"{r['task_id']} seed {r['seed']}"
                     + (f"\n{r.get('metric')} {value:.3g}" if value is not None else ""),
                     fontsize=7)
        images.append(figure_html(fig, f"{r['task_id']} seed {r['seed']}: predicted vs true"))
    note = ("<p>Circles and solid lines: true positions at the query times; crosses and "
            "dashed lines: the prediction; one colour per particle; x-y plane (3D worlds "
            f"projected onto it). {len(panels)} episodes, taken in turn from each task.</p>")
    return "Classical: predicted vs true positions", note + "".join(images)


def _box_patch(half: float) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((-half, -half), 2 * half, 2 * half, fill=False, color="grey", lw=0.8)


def scatter_other_worlds(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Predicted vs true values for worlds without a dedicated plot."""
    from ...report.figures import figure_html, new_figure

    by_world: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    for r in records:
        world = r.get("world") or "?"
        if world == "classical" or len(by_world[world]) >= MAX_EPISODE_PANELS:
            continue
        pair = _predictions(r)
        if pair is not None:
            by_world[world].append(pair)
    out = []
    for world, pairs in sorted(by_world.items()):
        if not pairs:
            continue
        fig, ax = new_figure(3.6, 3.4)
        true = np.concatenate([t.ravel() for _, t in pairs])
        predicted = np.concatenate([p.ravel() for p, _ in pairs])
        ax.scatter(true, predicted, s=8, alpha=0.6)
        lo, hi = float(min(true.min(), predicted.min())), float(max(true.max(), predicted.max()))
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set_xlabel("true")
        ax.set_ylabel("predicted")
        ax.set_title(f"{world}: first {len(pairs)} episodes", fontsize=9)
        # the title is text: the report escapes it where it is shown
        out.append((f"{world}: predicted vs true",
                    figure_html(fig, f"{world} predicted vs true values")))
    return out


def estimates(records: list[dict[str, Any]]) -> tuple[str, str] | None:
    """Parameter inference: the estimate against the truth."""
    from ...report.figures import figure_html, new_figure

    points = [(float(r["truth"]), float(r["answer"]["value"])) for r in records
              if isinstance(r.get("answer"), dict) and "value" in r["answer"]
              and isinstance(r.get("truth"), int | float)]
    if not points:
        return None
    fig, ax = new_figure(3.6, 3.4)
    true, guess = np.array(points).T
    ax.scatter(true, guess, s=14)
    lo, hi = float(min(true.min(), guess.min())), float(max(true.max(), guess.max()))
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.set_xlabel("true value")
    ax.set_ylabel("estimate")
    return "Parameter inference: estimate vs truth", figure_html(fig, "estimate vs truth")


def report_sections(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """All mad plots that the records support."""
    sections = [error_by_task(records), classical_panels(records), estimates(records)]
    return [s for s in sections if s is not None] + scatter_other_worlds(records)
