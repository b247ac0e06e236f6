"""What every executor runs: a picklable function and its arguments, alone or bundled
with the jobs that share its work (`units_of`, `play_group`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Job = tuple[Callable[..., Any], tuple[Any, ...]]


def play_group(members: Sequence[Job]) -> list[Any]:
    """Run jobs one after another in one worker: each one's result, or the exception it
    raised, so one failing job does not take its group's other results with it."""
    out: list[Any] = []
    for fn, args in members:
        try:
            out.append(fn(*args))
        except Exception as exc:  # noqa: BLE001 - reported per job by the driver
            out.append(exc)
    return out


def units_of(n_jobs: int, groups: Sequence[str | None] | None) -> list[list[int]]:
    """Job indices bundled by group label, in order of first appearance; a job without
    a label is a unit of its own."""
    units: list[list[int]] = []
    by_label: dict[str, list[int]] = {}
    for i in range(n_jobs):
        label = groups[i] if groups is not None else None
        if label is None:
            units.append([i])
        elif label in by_label:
            by_label[label].append(i)
        else:
            by_label[label] = [i]
            units.append(by_label[label])
    return units
