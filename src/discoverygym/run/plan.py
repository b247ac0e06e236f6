"""A run's plan: every episode it set out to play, written into run.json with a digest.

`discoverygym verify` holds a run to its plan: each planned episode must have exactly
one record and no record may lie outside it, so deleting failures, duplicating passes
or inventing episodes shows. The plan names the suite, the run options and seeds it
was made from (where the door knows them, so that verify can make the plan again and
catch an edited one), each episode's public identity (task, seed, options), the epochs,
and the key's id and commitment when the run is keyed (never the key).

The digest is SHA-256 over the plan's canonical JSON (keys sorted, no spaces). It
proves nothing by itself (whoever edits the plan can recompute it); it is the short
name of the plan that an organiser publishes beside the key's commitment and that
`verify --plan-digest` pins."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ..core import EpisodeSpec, episode_key
from ..core.record import _json_default

PLAN_FORMAT = 1


def canonical_json(value: Any) -> str:
    """The one JSON text of `value` that the digest is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_json_default)


def plain(value: Any) -> Any:
    """`value` as JSON reads it back (tuples become lists, numpy numbers plain)."""
    return json.loads(canonical_json(value))


def make_plan(specs: Sequence[EpisodeSpec], *, options: dict[str, Any] | None = None,
              seeds: Sequence[int] | None = None, epochs: int = 1,
              limit: int | None = None) -> dict[str, Any]:
    """The plan of a run of `specs` (all of one suite). `options` and `seeds` are the
    run options and seeds the specs were planned from (`plan_episodes`), when known;
    `limit` says the specs are the first `limit` of that plan."""
    suites = sorted({s.suite for s in specs})
    keys = {s.key for s in specs}
    if len(suites) > 1 or len({k.id if k else None for k in keys}) > 1:
        raise ValueError("a run plays one suite with one key")
    key = next(iter(keys), None)
    plan: dict[str, Any] = {
        "format": PLAN_FORMAT,
        "suite": suites[0] if suites else None,
        "episodes": [[s.task_id, s.seed, plain(s.options)] for s in specs],
        "epochs": int(epochs),
        "key_id": key.id if key is not None else None,
        "key_commitment": key.commitment if key is not None else None,
    }
    if options is not None and seeds is not None:
        plan["options"] = plain(options)
        plan["seeds"] = [int(seed) for seed in seeds]
        plan["limit"] = None if limit is None else int(limit)
    return plan


def plan_digest(plan: Any) -> str:
    return hashlib.sha256(canonical_json(plan).encode()).hexdigest()


def planned_identities(plan: dict[str, Any]) -> list[tuple[str, int]]:
    """(episode key, epoch) of every planned episode, as `records.record_id` names a
    record's. Raises ValueError on a plan that is not one."""
    suite, episodes, epochs = plan.get("suite"), plan.get("episodes"), plan.get("epochs", 1)
    if not isinstance(suite, str) or not isinstance(episodes, list):
        raise ValueError("the plan names no suite or no episodes")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or not 1 <= epochs <= 10_000:
        raise ValueError("the plan's epochs are not a small positive integer")
    out = []
    for entry in episodes:
        if (not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[0], str)
                or isinstance(entry[1], bool) or not isinstance(entry[1], int)
                or not isinstance(entry[2], dict)):
            raise ValueError("a planned episode is not [task, seed, options]")
        key = episode_key(suite, entry[0], entry[1], entry[2])
        out.extend((key, epoch) for epoch in range(1, epochs + 1))
    return out
