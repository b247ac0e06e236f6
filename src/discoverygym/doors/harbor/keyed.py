"""Keyed exports: every exported episode is drawn with a key, named opaquely, and listed
in a private index beside the tasks.

The key travels only to the side that scores or serves the episode (the verifier's
tests/ folder; for a live task, the MCP sidecar's own container), never into the
agent's image or its instruction. Task names are an HMAC of the episode under the key,
so a name says nothing of the world, task or seed it stands for; the index
(`INDEX_NAME` in the export folder) maps names back for the exporter.

Each task is drawn and scored with a key of its own (`task_key`: a subkey of the
export's key for that task's public identity), so what one task's verifier or sidecar
holds (its spec.json) rebuilds that task alone, never another of the export. Whoever
holds the export's key derives every task's key again to check records."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ...core import EpisodeSpec
from ...core.keys import Key, parse_key

INDEX_NAME = "discoverygym-index.json"


def opaque_name(spec: EpisodeSpec) -> str:
    """The task's directory and Harbor name: its suite and a keyed digest of the rest."""
    if spec.key is None:
        raise ValueError("an exported task is always keyed")
    digest = spec.key.derive("harbor-task-name", spec.to_dict())
    return f"{spec.suite}-{digest:032x}"[: len(spec.suite) + 17]


def task_key(export_key: Key, spec: EpisodeSpec) -> Key:
    """The key one exported task is drawn with: the export key's subkey for the task's
    public identity (suite, task, seed, options)."""
    return export_key.subkey("harbor-task", spec.to_dict())


def spec_conf(spec: EpisodeSpec) -> dict[str, Any]:
    """The spec as the scoring side reads it: the public identity and the key (hex)."""
    conf = spec.to_dict()
    if spec.key is not None:
        conf["key"] = spec.key.hex()
    return conf


def spec_from_conf(conf: dict[str, Any]) -> EpisodeSpec:
    """The keyed spec of a `spec_conf` (a spec without "key" is public)."""
    data = dict(conf)
    key = data.pop("key", None)
    return EpisodeSpec(**data, key=parse_key(key) if key else None)


def write_index(out_dir: Path, key: Key, names: dict[str, EpisodeSpec]) -> Path:
    """The exporter's private map of opaque names to episodes (merged with an earlier
    export into the same folder), readable by its owner only."""
    path = out_dir / INDEX_NAME
    index: dict[str, Any] = {"tasks": {}}
    if path.is_file():
        try:
            index = json.loads(path.read_text())
        except ValueError:
            index = {"tasks": {}}
    tasks = index.setdefault("tasks", {})
    for name, spec in names.items():
        tasks[name] = spec.to_dict() | {"key_id": key.id, "key_commitment": key.commitment,
                                        "task_key_id": task_key(key, spec).id}
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(index, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path
