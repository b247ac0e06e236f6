"""The grid of a run: a suite's cases crossed with seeds.

A suite's `plan(**options)` says *what* is asked: cases, each a task and the options its
episode is built with, and no seed. The seeds say *how many times, on which draws*: the
runner takes them from `--seeds` (core.seeds), or from the suite's `default_seeds`, and
every tool that plans episodes (run, calibrate, audit, the verifiers splits, the Harbor
export) crosses them the same way, with `cross` (in core/suite.py, beside the
`EpisodeSpec` it makes, which needs the registry: here it would be an import cycle). A
key, when given, enters there too: each crossed episode draws from HMAC(key, suite,
task, seed) (`Suite.keyed_episode`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .seeds import MAX_SEEDS


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
