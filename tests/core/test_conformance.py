"""The conformance check (core/conformance.py) over every registered suite, plugins
included, and proof that each of its checks finds a broken suite."""

from __future__ import annotations

from typing import Any

import pytest

import toy_suite
from discoverygym.core import Case, ToolInputError, ToolResult, register_suite, suite_names
from discoverygym.core.conformance import check_suite

toy_suite.install()


@pytest.mark.parametrize("name", suite_names())
def test_every_registered_suite_conforms(name):
    assert check_suite(name) == []


class ChargesForBadInput(toy_suite.GuessEpisode):
    def _probe(self, args: dict[str, Any]) -> ToolResult:
        self.usage.observations += 1  # charged before the input is checked
        if not 0 <= args["x"] <= 100:
            raise ToolInputError("x must lie in [0, 100].")
        return super()._probe(args)


class TruthInPrompt(toy_suite.GuessEpisode):
    @property
    def prompt(self) -> str:
        return f"Find the hidden number (it is {self._hidden:.6g}) in [0, 100] within 1."


class DrawsFromTheClock(toy_suite.GuessEpisode):
    def __init__(self, task_id: str, seed: int, budget: int) -> None:
        import time

        super().__init__(task_id, time.perf_counter_ns() % 1000, budget)
        self.seed = seed


class LongErrors(toy_suite.GuessEpisode):
    def _probe(self, args: dict[str, Any]) -> ToolResult:
        raise ToolInputError(f"bad x: {args!r}" * 100)


def _suite_of(episode_class: type, name: str) -> type:
    class Broken(toy_suite.ToySuite):
        def episode(self, task_id: str, *, seed: int = 0, **options: Any):
            return episode_class(task_id, seed, int(options.get("budget", 10)))

        def plan(self, **options: Any) -> list[Case]:
            return [Case("guess", {"budget": 10})]
    Broken.name = name
    Broken.__name__ = episode_class.__name__ + "Suite"
    return Broken


BROKEN = {name: _suite_of(cls, f"broken-{name}") for name, cls in [
    ("charges", ChargesForBadInput), ("leaks", TruthInPrompt),
    ("clock", DrawsFromTheClock), ("verbose", LongErrors)]}
ChargesForBadInputSuite, TruthInPromptSuite, DrawsFromTheClockSuite, LongErrorsSuite = (
    BROKEN.values())


@pytest.mark.parametrize("name, check", [
    ("charges", "bad input"), ("leaks", "hidden truth"), ("clock", "determinism"),
    ("verbose", "bad input")])
def test_each_check_finds_a_broken_suite(name, check):
    register_suite(f"broken-{name}", f"test_conformance:{type(BROKEN[name]()).__name__}")
    findings = check_suite(f"broken-{name}")
    assert any(f.check == check for f in findings), findings
