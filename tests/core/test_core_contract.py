"""The Episode contract: tool validation, budget, records, view isolation."""

from __future__ import annotations

import json
import math

import pytest

from discoverygym.core import EpisodeRecord, EpisodeView
from toy_suite import Bisect, GuessEpisode


def make() -> GuessEpisode:
    return GuessEpisode("guess", seed=3, budget=5)


@pytest.mark.parametrize("args, fragment", [
    ({"x": "fifty"}, "is not of type 'number'"),
    ({"x": math.nan}, "finite"),
    ({"x": math.inf}, "finite"),
    ({}, "'x' is a required property"),
    ({"x": 1, "y": 2}, "Additional properties"),
    ([1, 2], "JSON object"),
    ({"x": -5}, "[0, 100]"),
])
def test_bad_input_is_a_clear_error_and_costs_nothing(args, fragment):
    ep = make()
    result = ep.call("probe", args)
    assert result.is_error
    assert fragment in result.text
    assert ep.usage.observations == 0
    assert ep._budget.spent == 0
    assert not ep.done
    assert not ep.call("probe", {"x": 10}).is_error  # the episode goes on


def test_unknown_tool_lists_the_tools():
    result = make().call("peek", {})
    assert result.is_error and "probe" in result.text and "submit" in result.text


def test_budget_refuses_with_remaining_and_charges_nothing():
    ep = make()
    for _ in range(5):
        assert not ep.call("probe", {"x": 1}).is_error
    result = ep.call("probe", {"x": 1})
    assert result.is_error and "0 of 5 remain" in result.text
    assert ep.usage.observations == 5


def test_submit_twice_is_refused():
    ep = make()
    assert not ep.call("submit", {"answer": 3}).is_error
    again = ep.call("submit", {"answer": 4})
    assert again.is_error and "ended" in again.text
    assert ep.record().answer == 3


def test_missing_answer_is_a_failed_record_with_reason():
    ep = make()
    ep.call("probe", {"x": 10})
    rec = ep.record(agent="t")
    assert rec.passed is False and rec.score == 0 and rec.error == "no answer submitted"
    assert rec.usage.observations == 1 and rec.usage.tool_calls == 1


def test_record_round_trips_json():
    ep = GuessEpisode("guess", seed=3, budget=10)
    Bisect().solve(ep.view())
    rec = ep.record(agent="bisect")
    again = EpisodeRecord.from_dict(json.loads(rec.to_json()))
    assert again == rec and rec.passed and rec.schema_version == 1


def test_internal_tool_bug_does_not_raise():
    ep = make()

    def broken(args):
        raise ZeroDivisionError("secret 42")

    ep._tool_table["probe"] = (ep._tool_table["probe"][0], broken)
    result = ep.call("probe", {"x": 1})
    assert result.is_error and "secret" not in result.text and "ZeroDivisionError" in result.text


def _walk(obj, seen, depth=0):
    """Every object reachable through non-dunder attributes and containers."""
    if id(obj) in seen or depth > 6:
        return
    seen[id(obj)] = obj
    if isinstance(obj, dict):
        for v in obj.values():
            _walk(v, seen, depth + 1)
        return
    if isinstance(obj, list | tuple | set):
        for v in obj:
            _walk(v, seen, depth + 1)
        return
    if isinstance(obj, str | bytes | int | float | bool | type(None)):
        return
    for name in dir(obj):
        if name.startswith("__"):
            continue
        try:
            _walk(getattr(obj, name), seen, depth + 1)
        except Exception:
            pass


def test_view_exposes_only_the_contract():
    ep = make()
    view = ep.view()
    public = {n for n in dir(view) if not n.startswith("_")}
    assert public == {"prompt", "tools", "tool_names", "call", "workspace", "done"}
    seen: dict[int, object] = {}
    _walk(view, seen)
    assert all(o is not ep for o in seen.values())
    assert all(not (isinstance(o, float) and o == ep._hidden) for o in seen.values())
    with pytest.raises(AttributeError):
        view.prompt = "x"
    assert isinstance(view, EpisodeView)


def test_random_streams_are_named_once_and_never_shared():
    """Each suite names its streams in its own streams.py (core names none), every
    stream constant is distinct within its suite, and no suite module keys a generator
    with a bare number any more (they name a stream of their suite's streams.py)."""
    import importlib
    import re
    from pathlib import Path

    from discoverygym.core import streams

    assert not [k for k in vars(streams) if k.isupper()]  # core names no suite's stream
    suites = Path(streams.__file__).parents[1] / "suites"
    declared = sorted(p.parent.name for p in suites.glob("*/streams.py"))
    assert declared == ["gravity", "mad", "tpbench"]
    for suite in declared:
        module = importlib.import_module(f"discoverygym.suites.{suite}.streams")
        values = [v for k, v in vars(module).items() if k.isupper()]
        assert values and len(values) == len(set(values)), suite
    bare = re.compile(r"default_rng\(\[[^\]]*?,\s*(0x[0-9A-Fa-f]+|\d+)\s*[\],]")
    for path in suites.rglob("*.py"):
        if "baselines" not in path.parts:
            assert not bare.search(path.read_text()), path
