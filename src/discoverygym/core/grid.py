"""The grid of a run: a suite's cases crossed with seeds.

A suite's `plan(**options)` says *what* is asked: cases, each a task and the options its
episode is built with, and no seed. The seeds say *how many times, on which draws*: the
runner takes them from `--seeds` (core.seeds), or from the suite's `default_seeds`, and
every tool that plans episodes (run, calibrate, audit, the verifiers splits, the Harbor
export) crosses the same way here. A key, when given, enters here too: each crossed
episode draws from HMAC(key, suite, task, seed) (`Suite.keyed_episode`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .keys import Key
from .seeds import MAX_SEEDS

if TYPE_CHECKING:
    from .suite import EpisodeSpec, Suite


@dataclass(frozen=True)
class Case:
    """One cell of a plan: a task and the options its episode is built with. A case has
    no seed; the grid gives it one."""

    task_id: str
    options: dict[str, Any] = field(default_factory=dict)


def checked_seeds(seeds: Iterable[int]) -> list[int]:
    """`seeds` as a list of integers >= 0, in the order given, without repeats."""
    out: dict[int, None] = {}
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"a seed is an integer >= 0, not {str(seed)[:40]!r}")
        out[seed] = None
        if len(out) > MAX_SEEDS:
            raise ValueError(f"at most {MAX_SEEDS} seeds")
    if not out:
        raise ValueError("no seeds given")
    return list(out)


def seed_text(seeds: Sequence[int]) -> str:
    """Seeds as `--seeds` takes them: "0-9" for a run of consecutive seeds, else a list."""
    seeds = list(seeds)
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def cross(suite: str, cases: Sequence[Case], seeds: Iterable[int], *,
          key: Key | None = None) -> list[EpisodeSpec]:
    """Every case with every seed, case by case (a case's seeds side by side), each
    (task, options, seed) once; keyed by `key` when given."""
    from .suite import EpisodeSpec

    seed_list = checked_seeds(seeds)
    seen: dict[str, Case] = {}
    for case in cases:
        if not isinstance(case, Case):
            raise TypeError(f"{suite}'s plan() gave {type(case).__name__}, not a Case: a plan "
                            "holds cases (task, options); the runner gives the seeds")
        seen.setdefault(json.dumps([case.task_id, case.options], sort_keys=True,
                                   default=str), case)
    return [EpisodeSpec(suite, case.task_id, seed, dict(case.options), key)
            for case in seen.values() for seed in seed_list]


def plan_episodes(suite: Suite, options: dict[str, Any] | None = None,
                  seeds: Iterable[int] | None = None, *,
                  key: Key | None = None) -> list[EpisodeSpec]:
    """The episodes of a run of `suite` with these (parsed) options: its plan crossed
    with `seeds` (default: the suite's `default_seeds`)."""
    cases = suite.plan(**(options or {}))
    return cross(suite.name, cases, suite.default_seeds if seeds is None else seeds, key=key)
