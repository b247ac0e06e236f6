"""Which episodes a verifiers taskset holds: the selection of `discoverygym run` (the
suite's own run options), split so that training can never see an evaluation episode.

- **eval**: the suite's cases for the given options (its published tasks and worlds),
  crossed with the runner's seeds (`--seeds`, one parser: core.seeds; default 0) moved
  into the held-out range: seed s plays episode seed `EVAL_SEED_START + s`. A
  procedural world (`world_seed`) must come from that range too.
- **train**: never an evaluation world or a published task's truth, whatever the
  options. A suite that draws procedural worlds (a `world_seed` run option) trains on
  worlds `0, 1, 2, ...` with episode seeds of the same numbers; a suite whose seed alone
  draws a task's truth (`Suite.seed_draws_truth`) trains on its planned tasks with
  seeds `0, 1, 2, ...`. Choosing a world (`world`, `worlds`, `world_seed`) is refused,
  and so is a suite with neither (its tasks' truths are the evaluation's). Both stay
  below `EVAL_SEED_START`. Endless: a trainer takes what it needs.

The eval split is keyed (`eval_key`): nobody without the key can rebuild its episodes
from the public code and seeds, so a trainer or a policy that holds the package cannot
score itself on them by replaying. The train split stays public.

Pure Python over the registry: no verifiers import, no suite named."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...core import Case, EpisodeSpec, cross, get_suite
from ...core.grid import checked_seeds
from ...core.keys import KEY_FILE_ENV, Key, key_from_environment, new_key, write_key_file
from ...core.seeds import parse_seeds

#: First seed of the held-out evaluation range; training seeds stay below it.
EVAL_SEED_START = 1_000_000
SPLITS = ("train", "eval")
#: The run option through which a suite draws procedural worlds.
WORLD_SEED = "world_seed"
_WORLD_CHOICES = ("world", "worlds", WORLD_SEED)


def _parsed(suite: str, raw: dict[str, str]) -> dict[str, Any]:
    return get_suite(suite).parse_options({str(k): str(v) for k, v in raw.items()})


def _cases(suite: str, options: dict[str, Any]) -> list[Case]:
    """The suite's cases (task, options) for the selection; the split sets the seeds."""
    cases = get_suite(suite).plan(**options)
    if not cases:
        raise ValueError(f"The selection {options or '(defaults)'} holds no episode of {suite}.")
    return cases


def _seed_list(seeds: str | Sequence[int] | None) -> list[int]:
    if seeds is None:
        return [0]
    return parse_seeds(seeds) if isinstance(seeds, str) else checked_seeds(seeds)


def eval_specs(suite: str, raw: dict[str, str] | None = None,
               seeds: str | Sequence[int] | None = None, *,
               key: Key | None = None) -> list[EpisodeSpec]:
    """The evaluation episodes: every case once per seed of `seeds` (a `--seeds` text
    or a list; default 0), each moved into the held-out range."""
    held_out = [EVAL_SEED_START + s for s in _seed_list(seeds)]
    if held_out[-1] >= 2 * EVAL_SEED_START:
        raise ValueError(f"eval seeds run from 0 to {EVAL_SEED_START - 1} (each is played "
                         f"as {EVAL_SEED_START} + seed, in the held-out range)")
    options = _parsed(suite, raw or {})
    world_seed = options.get(WORLD_SEED)
    if world_seed is not None and int(world_seed) < EVAL_SEED_START:
        raise ValueError(f"An evaluation world_seed must be at least {EVAL_SEED_START}; "
                         "lower world seeds are training worlds.")
    return cross(suite, _cases(suite, options), held_out, key=key)


def train_specs(suite: str, raw: dict[str, str] | None = None) -> Iterator[EpisodeSpec]:
    """Training episodes, endless: round r plays every planned task with seed r, on
    procedural world r where the suite draws them. A selection that would train on an
    evaluation world or a published task's truth is refused (ValueError), here and not
    at the first episode."""
    options = _parsed(suite, raw or {})
    chosen = [k for k in _WORLD_CHOICES if options.get(k) is not None]
    if chosen:
        names = ", ".join("--" + k.replace("_", "-") for k in chosen)
        raise ValueError(f"The train split draws its own procedural worlds; {names} "
                         "would train on a chosen (evaluation) world. Leave it out.")
    entry = get_suite(suite)
    if any(o.name == WORLD_SEED for o in entry.run_options):
        return _rounds(suite, options, None)
    if entry.seed_draws_truth:
        return _rounds(suite, options, _cases(suite, options))
    raise ValueError(f"{suite} has no procedural worlds and its tasks' truths do not "
                     "depend on the seed: training on them would train on the evaluation "
                     "answers. Its episodes are for --split eval only.")


def _rounds(suite: str, options: dict[str, Any],
            fixed: list[Case] | None) -> Iterator[EpisodeSpec]:
    for seed in itertools.count():
        if seed >= EVAL_SEED_START:
            return
        yield from cross(suite, fixed or _cases(suite, {**options, WORLD_SEED: seed}), [seed])


def eval_key() -> Key:
    """The key of the eval split: DISCOVERYGYM_KEY_FILE or DISCOVERYGYM_KEY, else a fresh
    key written to a private file whose path (not the key) goes into
    DISCOVERYGYM_KEY_FILE, for the tool servers this process starts to rebuild the
    same episodes."""
    key = key_from_environment()
    if key is None:
        key = new_key()
        path = Path(tempfile.mkdtemp(prefix="dg-eval-key-")) / "eval.key"
        write_key_file(path, key)
        os.environ[KEY_FILE_ENV] = str(path)
    return key


def split_specs(suite: str, split: str, raw: dict[str, str] | None = None,
                seeds: str | Sequence[int] | None = None) -> Iterator[EpisodeSpec]:
    """The episodes of `split` ("train" or "eval"); the eval split's are keyed. `seeds`
    (the runner's `--seeds`) belong to the eval split; training draws its own."""
    if split == "eval":
        return iter(eval_specs(suite, raw, seeds, key=eval_key()))
    if split == "train":
        if seeds is not None:
            raise ValueError("--seeds chooses the eval split's seeds; the train split plays "
                             "seeds 0, 1, 2, ... round by round (say how many tasks with -n).")
        return train_specs(suite, raw)
    raise ValueError(f"Unknown split {split!r}; splits: {', '.join(SPLITS)}.")
