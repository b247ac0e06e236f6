"""The door-parity policy, shared by the parity test of every door (tests/doors/
test_door_parity.py, the OpenEnv and verifiers doors' tests in their own environments,
and the fake chat server): one scripted play of the toy suite and the record fields
every door must leave the same."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import toy_suite
from discoverygym.core import get_suite

toy_suite.install()
SEED = 0  # the first episode of the toy plan, which Inspect plays with limit=1
FIELDS = ("answer", "passed", "score")
USAGE = ("observations", "submissions", "tool_calls", "tool_errors")


def policy() -> Generator[tuple[str, dict[str, Any]], str, None]:
    """Yields (tool, arguments), receives the reply text: the same decisions on every
    door (and as the Inspect policy `parity`)."""
    yield "probe", {"x": 500.0}
    yield "probe", {"x": "not a number"}
    lo, hi = 0.0, 100.0
    for _ in range(8):
        mid = (lo + hi) / 2
        if "True" in (yield "probe", {"x": mid}):
            lo = mid
        else:
            hi = mid
    yield "submit", {"answer": (lo + hi) / 2}


def drive(call: Callable[[str, dict[str, Any]], str]) -> None:
    steps = policy()
    step = next(steps)
    while True:
        try:
            step = steps.send(call(*step))
        except StopIteration:
            return


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    return {**{k: record[k] for k in FIELDS}, **{k: record["usage"][k] for k in USAGE}}


def report(door: str, record: dict[str, Any]) -> None:
    """Writes the door's row of the README's parity table where tools/door_parity.py asks
    for it (DISCOVERYGYM_PARITY_OUT names a folder), so the table comes from these very
    tests, in each door's own environment."""
    out = os.environ.get("DISCOVERYGYM_PARITY_OUT")
    if out:
        Path(out, f"{door}.json").write_text(json.dumps(_summary(record)))


def _direct() -> dict[str, Any]:
    episode = get_suite("toy").episode("guess", seed=SEED, budget=10)
    view = episode.view()
    drive(lambda name, args: view.call(name, args).text)
    return episode.record(agent="parity").to_dict()
