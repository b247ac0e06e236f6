"""SOTA parsing, g, task scores and aggregates, against hand computations."""

from __future__ import annotations

import math

import pytest

from discoverygym.naturegym.format.scoring import (
    TaskResult,
    aggregate,
    best_sota,
    clip_g,
    clipped_task_score,
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
    got = parse_sota(text, direction, "discoverygym")
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


def test_g_clipped_floors_each_instance_at_a_missing_answer():
    # An answer 471 times the SOTA's error scores g = -470 under the published formula;
    # clipped it is worth as much as no answer (-1), never less.
    wild = instance_g(4.71, 0.01, LO)
    assert wild == pytest.approx(-470.0)
    assert clip_g(wild) == -1.0 and clip_g(0.3) == 0.3 and clip_g(-0.4) == -0.4
    assert clip_g(math.nan) == -1.0
    # per instance, then the mean: the good instance still counts
    assert task_score([wild, 0.5]) == pytest.approx(-234.75)
    assert clipped_task_score([wild, 0.5]) == pytest.approx(-0.25)
    assert clipped_task_score([0.2, -0.6]) == pytest.approx(task_score([0.2, -0.6]))


def test_aggregate_means_use_g_clipped_and_thresholds_the_published_g():
    results = [TaskResult("a", "physics", 0.3), TaskResult("b", "physics", 0.05),
               TaskResult("w", "physics", -470.0),             # old record: max(g, -1)
               TaskResult("v", "physics", -234.75, -0.25),     # record with g_clipped
               TaskResult("d", "physics", None, 0.7)]          # not completed: -1 anyway
    agg = aggregate(results)
    clipped = [0.3, 0.05, -1.0, -0.25, -1.0]
    published = [0.3, 0.05, -470.0, -234.75, -1.0]
    assert agg["mean_g"] == pytest.approx(sum(clipped) / 5)
    assert agg["median_g"] == pytest.approx(-0.25)
    assert agg["mean_g_published"] == pytest.approx(sum(published) / 5)
    assert agg["median_g_published"] == pytest.approx(-1.0)
    assert agg["match_rate"] == pytest.approx(2 / 5) and agg["surpass_rate"] == pytest.approx(1 / 5)
    assert agg["buckets"]["< -0.5"] == 3       # by the published g: -470, -234.75, -1
    assert agg["per_domain"]["physics"]["mean_g"] == pytest.approx(agg["mean_g"])
