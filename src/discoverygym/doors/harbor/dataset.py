"""Export a selection of episodes: each becomes a file task (`export.py`) when its suite
says it can be played with no live tool, a sidecar task (`sidecar.py`) otherwise. Kept
apart from both so that neither imports the other's dispatcher."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core import EpisodeSpec, get_suite, plan_episodes
from ...core.keys import Key, new_key
from .export import ExportedTask, default_oracle, export_file_task
from .keyed import opaque_name, task_key, write_index
from .sidecar import export_sidecar_task


def export_tasks(suite: str, out_dir: Path, *, options: dict[str, Any] | None = None,
                 specs: list[EpisodeSpec] | None = None, oracle: str | None = None,
                 wheel: Path | None = None, limit: int | None = None,
                 key: Key | None = None,
                 seeds: Sequence[int] | None = None) -> list[ExportedTask]:
    """Export the episodes of `suite` that a run with these (parsed) options and
    `seeds` (default: the suite's) would play, or `specs`, into `out_dir` (one directory
    per episode; an existing one is replaced). Single-submit episodes become file
    tasks, the others sidecar tasks.

    Every task is keyed (with its own subkey of `key`, else of a fresh key for this
    export: keyed.py), named opaquely, and listed in the private index
    `out_dir/discoverygym-index.json`."""
    key = key or new_key()
    if specs is None:
        chosen = plan_episodes(get_suite(suite), options, seeds, key=key)
    else:
        chosen = [spec.with_key(key) for spec in specs]
    chosen = chosen[:limit] if limit is not None else chosen
    oracle = oracle or default_oracle(suite)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = {opaque_name(spec): spec for spec in chosen}
    write_index(out_dir, key, names)
    done = []
    for name, spec in names.items():
        # What the task's verifier holds opens this task alone (keyed.task_key).
        spec = spec.with_key(task_key(key, spec))
        task_dir = out_dir / name
        if task_dir.exists():
            shutil.rmtree(task_dir)
        task_dir.mkdir()
        if get_suite(spec.suite).single_submit(spec):
            done.append(export_file_task(spec, task_dir, oracle=oracle, wheel=wheel))
        else:
            done.append(export_sidecar_task(spec, task_dir, wheel=wheel))
    return done
