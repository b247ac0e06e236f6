"""Task banks: 20 easy / 40 medium / 40 hard synthetic tasks per bank seed.

A bank is found deterministically: task seeds bank_seed * 1_000_000 + i for i = 0, 1,
... are generated in order and each is kept if its tier still has room. The list of
kept seeds is cached in-process and on disk (cache_dir("stargazer", "banks"), one file
per bank seed and generator version)."""

from __future__ import annotations

import dataclasses
import json
import re
from functools import cache

from ...core.paths import cache_dir
from .generator import GENERATOR_VERSION, generate_task
from .task import RVTask

DEFAULT_BANK_SEED = 0
BANK_SIZES = {"easy": 20, "medium": 40, "hard": 40}
SEED_STRIDE = 1_000_000
_ID = re.compile(r"^(?:bank(?P<bank>\d+)-)?(?P<tier>easy|medium|hard)-(?P<k>\d{3})$")


@cache
def bank_seeds(bank_seed: int = DEFAULT_BANK_SEED) -> dict[str, tuple[int, ...]]:
    """Task seeds of each tier of a bank (deterministic; cached)."""
    # the generator version is in the name: a changed generator never reads a stale list
    path = cache_dir("stargazer", "banks") / f"bank-{bank_seed}-g{GENERATOR_VERSION}.json"
    if path.exists():
        try:
            data = json.loads(path.read_text())
            if {k: len(v) for k, v in data.items()} == BANK_SIZES:
                return {k: tuple(v) for k, v in data.items()}
        except (OSError, ValueError):
            pass
    kept: dict[str, list[int]] = {tier: [] for tier in BANK_SIZES}
    i = 0
    while any(len(kept[t]) < n for t, n in BANK_SIZES.items()):
        seed = bank_seed * SEED_STRIDE + i
        tier = _task_by_seed(seed).tier
        if len(kept[tier]) < BANK_SIZES[tier]:
            kept[tier].append(seed)
        i += 1
        if i >= SEED_STRIDE:
            raise RuntimeError(f"bank {bank_seed}: tiers not filled in {SEED_STRIDE} seeds")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(kept))
    tmp.replace(path)
    return {k: tuple(v) for k, v in kept.items()}


@cache
def _task_by_seed(seed: int) -> RVTask:
    return generate_task(seed)


def bank_task_ids(bank_seed: int = DEFAULT_BANK_SEED) -> list[str]:
    """Task ids of a bank: "easy-000".. for the default bank, "bank<N>-easy-000".. else."""
    prefix = "" if bank_seed == DEFAULT_BANK_SEED else f"bank{bank_seed}-"
    return [f"{prefix}{tier}-{k:03d}" for tier, n in BANK_SIZES.items() for k in range(n)]


def is_bank_id(task_id: str) -> bool:
    return _ID.match(task_id) is not None


#: How many keyed draws a tier may take (the rarest tier, easy, is ~1 draw in 13).
MAX_KEYED_DRAWS = 10_000


def keyed_bank_task(task_id: str, draw_seed: int) -> RVTask:
    """The task a bank id stands for under a key: the first task of the id's tier among
    the synthetic tasks of seeds draw_seed, draw_seed + 1, ... (`draw_seed` is the
    episode's keyed draw; nobody without the key can name it). Never cached on disk."""
    m = _ID.match(task_id)
    if m is None:
        raise ValueError(f"not a bank task id: {task_id!r}")
    tier, k = m["tier"], int(m["k"])
    if k >= BANK_SIZES[tier]:
        raise ValueError(f"{task_id!r}: tier {tier} has tasks 000..{BANK_SIZES[tier] - 1:03d}")
    for i in range(MAX_KEYED_DRAWS):
        task = generate_task(draw_seed + i, task_id=task_id)
        if task.tier == tier:
            return task
    raise RuntimeError(f"{task_id}: no keyed {tier} task in {MAX_KEYED_DRAWS} draws")


def bank_task(task_id: str) -> RVTask:
    """The bank task with this id (ValueError if the id is not a bank id)."""
    m = _ID.match(task_id)
    if m is None:
        raise ValueError(f"not a bank task id: {task_id!r}")
    bank = int(m["bank"]) if m["bank"] is not None else DEFAULT_BANK_SEED
    tier, k = m["tier"], int(m["k"])
    if k >= BANK_SIZES[tier]:
        raise ValueError(f"{task_id!r}: tier {tier} has tasks 000..{BANK_SIZES[tier] - 1:03d}")
    seed = bank_seeds(bank)[tier][k]
    task = _task_by_seed(seed)
    return dataclasses.replace(task, task_id=task_id)
