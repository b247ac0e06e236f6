"""SOTA parsing, g, task scores and aggregates, against hand computations."""

from __future__ import annotations

import math

import pytest

from discoverygym.suites.packages.scoring import (
    TaskResult,
    aggregate,
    best_sota,
    instance_g,
    parse_sota,
    task_score,
)

HI, LO = "higher_is_better", "lower_is_better"


@pytest.mark.parametrize("text, direction, expected", [
    ("95.5 ± 0.2", HI, 95.5),
    ("95.5 +/- 0.2", HI, 95.5),
    ("mean=0.93 (5 runs)", HI, 0.93),
    ("0.87 (reported in the supplement)", HI, 0.87),
    ("~3.2", LO, 3.2),
    ("0.85-0.90", HI, 0.90),
    ("0.85-0.90", LO, 0.85),
    ("12 to 15", LO, 12.0),
    ("< 1.6", LO, 1.6),
    ("≤ 2e-3", LO, 2e-3),
    ("R2 of 0.91", HI, 0.91),
    ("-0.3", HI, -0.3),
    (0.25, HI, 0.25),
    ("not reported", HI, None),
    (None, HI, None),
])
def test_parse_sota(text, direction, expected):
    got = parse_sota(text, direction)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_best_sota_by_direction():
    entries = [{"value": "0.8"}, {"value": "0.9 ± 0.1"}, {"value": "n/a"}]
    assert best_sota(entries, HI) == 0.9 and best_sota(entries, LO) == 0.8
    assert best_sota([{"value": "?"}], HI) is None


def test_instance_g_and_failures():
    assert instance_g(0.99, 0.9, HI) == pytest.approx(0.1)
    assert instance_g(0.5, 1.0, LO) == pytest.approx(0.5)   # half the error: g = +0.5
    assert instance_g(2.0, 1.0, LO) == pytest.approx(-1.0)
    assert instance_g(-0.2, -0.4, HI) == pytest.approx(0.5)  # |sota| in the denominator
    assert instance_g(None, 1.0, HI) == -1.0
    assert instance_g(math.nan, 1.0, HI) == -1.0
    assert task_score([0.2, -1.0, 0.5]) == pytest.approx(-0.1)


def test_aggregate_matches_hand_computation():
    results = [TaskResult("a", "physics", 0.3), TaskResult("b", "physics", 0.05),
               TaskResult("c", "biology", -0.2), TaskResult("d", "biology", None),
               TaskResult("e", "physics", 0.1)]
    agg = aggregate(results)
    gs = [0.3, 0.05, -0.2, -1.0, 0.1]
    assert agg["surpass_rate"] == pytest.approx(1 / 5)     # only 0.3 > 0.1
    assert agg["match_rate"] == pytest.approx(3 / 5)       # 0.3, 0.05, 0.1
    assert agg["mean_g"] == pytest.approx(sum(gs) / 5)
    assert agg["median_g"] == pytest.approx(0.05)
    assert agg["completion_rate"] == pytest.approx(4 / 5)
    assert agg["buckets"] == {"< -0.5": 1, "-0.5..0": 1, "0..0.1": 2, "0.1..0.5": 1, "> 0.5": 0}
    assert agg["per_domain"]["biology"]["match_rate"] == 0.0
    assert agg["per_domain"]["physics"]["n_tasks"] == 3
