"""SOTA strings are read as NatureBench's own service reads them (their unmodified
eval_service.py, vendored under tests/data/naturebench, is the reference)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from discoverygym.naturegym.format.scoring import (
    DEFAULT_SOTA_PARSER,
    best_sota,
    parse_sota,
)
from testpaths import TESTS

NB_DIR = TESTS / "data" / "naturebench"
HI, LO = "higher_is_better", "lower_is_better"


def load_their_service():
    spec = importlib.util.spec_from_file_location("naturebench_eval_service",
                                                  NB_DIR / "eval_service.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


THEIRS = load_their_service()

#: The forms of the issue (8 of 24 read differently before) and their documented forms.
STRINGS = [
    "10.6", "0.939 ± 0.002", "11.5 (0.6)", "~0.734 ± 0.008", "~0.60 to ~0.95",
    "0.85-0.97", "0.95 to 0.60", "< 1.6", ">= 0.9", "..., (mean=0.919)", "MEAN = 3",
    "−0.45", "top-1 acc 76.4", "R2 = 0.91", ".85", "≤ 2e-3", "95.5 +/- 0.2",
    "-0.3", "1e-3", "3.2e-05 ± 1e-6", "not reported", "", "   ", "~", "0.5 to",
    "12 to 15 (two runs)", "76.4%", "(0.9)", "±0.1", 0.25, 3, None, True,
    {"value": 0.3}, ["0.4"],
]


@pytest.mark.parametrize("text", STRINGS, ids=[repr(s)[:30] for s in STRINGS])
@pytest.mark.parametrize("direction", [HI, LO])
def test_default_reader_is_theirs(text, direction):
    assert DEFAULT_SOTA_PARSER == "naturebench"
    theirs = THEIRS._parse_one_score(text, direction == HI)
    ours = parse_sota(text, direction)
    assert ours == theirs


def test_the_issue_cases_read_as_theirs():
    assert parse_sota("−0.45", HI) is None            # not +0.45
    assert parse_sota("top-1 acc 76.4", HI) is None   # not 1
    assert parse_sota("~0.60 to ~0.95", HI) == 0.95   # the better end
    assert parse_sota("~0.60 to ~0.95", LO) == 0.60
    assert parse_sota("R2 = 0.91", HI) is None and parse_sota(".85", HI) is None


def test_lenient_reader_kept_by_name_and_fixed_sign():
    assert parse_sota("−0.45", HI, "discoverygym") == -0.45
    assert parse_sota("~0.60 to ~0.95", HI, "discoverygym") == 0.95
    assert parse_sota("R2 = 0.91", HI, "discoverygym") == 0.91
    with pytest.raises(ValueError):
        parse_sota("1", HI, "nope")


@pytest.mark.parametrize("sota_score", [
    [{"value": "0.8"}, {"value": "0.9 ± 0.1"}, {"value": "n/a"}],
    [{"value": "~0.60 to ~0.95"}, {"value": 0.9}],
    [0.5, "0.7"], [{"method": "no value"}], [None],
])
@pytest.mark.parametrize("direction", [HI, LO])
def test_best_of_several_as_theirs(sota_score, direction):
    assert best_sota(sota_score, direction) == THEIRS._best_sota(sota_score, direction == HI)


def test_hostile_strings_are_bounded():
    assert parse_sota("1" * 100_000, HI) is None
    assert parse_sota("nan", HI) is None and parse_sota(float("inf"), HI) is None
    assert parse_sota("1e400", HI) is None


@pytest.mark.parametrize("raw", [
    {"site_a": {"RMSE": 0.5}, "site_b": {"RMSE": 0.9}},
    {"site_a": {"rmse": 0.5}, "site_b": {"R-M_S E": 0.3}},            # their fuzzy names
    {"site_a": {"metrics": {"RMSE": 0.5}}, "site_b": {"x": {"y": {"rmse": 0.4}}}},
    {"site_a": {"RMSE": True, "inner": {"RMSE": 0.7}}, "site_b": {"RMSE": "0.4"}},
    {"site_a": {"RMSE": None, "error": "bad"}, "site_b": 0.4},
    {"RMSE": 0.1},                                                     # no leak across
    {},
])
def test_instance_g_as_their_service_computes_it(raw):
    """The same g per instance and the same task score as their `_compute_improvements`
    over their own reading of the package's metadata."""
    from discoverygym.naturegym.format.evaluator_runner import score_raw
    from discoverygym.naturegym.format.package import load_package

    root = TESTS / "data" / "naturebench_packages" / "nbtest-flux-regression"
    table, _issues = THEIRS._get_per_instance_primaries(root / "metadata.json")
    their_g, their_score = THEIRS._compute_improvements(raw, table)
    ours = score_raw(load_package(root), raw)
    assert ours.g == pytest.approx(their_g) and ours.score == pytest.approx(their_score)


def test_metric_search_is_bounded():
    from discoverygym.naturegym.format.evaluator_runner import find_metric

    deep: dict = {"RMSE": 0.5}
    for _ in range(10_000):
        deep = {"x": deep}
    assert find_metric(deep, "RMSE") is None  # not searched past 32 levels, no crash
    assert find_metric({"a": {"b": {"rmse": float("inf")}}}, "RMSE") is None
