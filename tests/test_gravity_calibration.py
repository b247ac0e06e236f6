"""`discoverygym calibrate gravity` on a small seed set: the trivial agents, the
leak-free default window (no leak) against the published one (the period leaks)."""

from __future__ import annotations

import math

import pytest

from discoverygym.calibrate import LEAKS, VALID, calibrate
from discoverygym.suites.gravity.baselines import AGENTS, CALIBRATION
from discoverygym.suites.gravity.baselines.trivial import constant_answer, window_answer
from discoverygym.suites.gravity.constants import AU_M, G_SI, MSUN_KG, YEAR_S
from discoverygym.suites.gravity.tasks import TASKS

# The tasks the window gives away under the published windows (the period and what
# follows from it alone), and tasks of the other answer types. Tasks the README's table
# shows leaking, or a trivial agent passing now and then by chance (travel_time_70pct_path:
# 2 of 15 over seeds 0-4), are judged on their own below or left to the full table.
WINDOW_TASKS = "period,multiply_mass_period"
OTHER_TASKS = "mass_star1,semi_major_axis,max_velocity_star2,kepler_3rd_law,virial_theorem"


def test_calibration_names_agents_of_the_suite():
    assert {a for names in CALIBRATION.values() for a in names} <= set(AGENTS)


def test_every_task_has_a_constant_guess_of_its_type():
    for task in TASKS.values():
        value = constant_answer({"id": task.id, "answer_type": task.answer_type,
                                 "answer_unit": task.unit})
        assert isinstance(value, bool) == (task.answer_type == "boolean")
        assert isinstance(value, bool) or math.isfinite(value)


def test_the_constant_period_is_keplers_for_the_reference_binary():
    """Independent check of the constant agent's scale: a Sun-Earth-like orbit of two
    solar masses has P = 1 yr / sqrt(2) (Kepler's third law in solar units)."""
    period = constant_answer({"id": "period", "answer_type": "number", "answer_unit": "s"})
    assert period == pytest.approx(YEAR_S / math.sqrt(2), rel=2e-3)
    assert G_SI * 2 * MSUN_KG * period**2 / (4 * math.pi**2 * AU_M**3) == pytest.approx(1.0)


def test_window_guess_takes_ten_orbits():
    assert window_answer({"id": "period"}, 1e9) == 1e8
    assert window_answer({"id": "multiply_mass_period"}, 21 * 86400 * 20) == 4.0
    assert window_answer({"id": "travel_time_70pct_path"}, 1e9) == pytest.approx(7e7)


def _verdicts(tmp_path, name: str, tasks: str, seeds: list[int], **options: str):
    result = calibrate("gravity", seeds=seeds, tasks=tasks, raw_options=options,
                       runs_dir=tmp_path / name, executor="serial")
    assert not result.infrastructure_failures
    return {t.task_id: t for t in result.tasks}


def test_default_window_gives_nothing_away_and_every_task_is_valid(tmp_path):
    tasks = _verdicts(tmp_path, "default", f"{WINDOW_TASKS},{OTHER_TASKS}", [0])
    assert len(tasks) == 7
    for task in tasks.values():
        assert task.verdict == VALID, (task.task_id, task.reason)
        assert task.rates["expert-adaptive"].rate == 1.0
        assert task.rates["no-answer"].passed == 0


def test_published_window_leaks_the_period(tmp_path):
    """Gravity-Bench-v1's windows hold exactly ten orbits: window / 10 is the period, and
    calibrate says so."""
    tasks = _verdicts(tmp_path, "published", "period,multiply_mass_period", [0],
                      window="published")
    for task_id in ("period", "multiply_mass_period"):
        assert tasks[task_id].verdict == LEAKS
        assert tasks[task_id].rates["window-guess"].rate == 1.0
        assert tasks[task_id].rates["constant"].passed == 0


def test_the_published_pairs_known_leaks_stay_flagged(tmp_path):
    """Weaknesses of the published pairs themselves, left as published and explained in
    the README's calibration section: 'bound' without looking is right on 7 of 8 worlds
    (above the 70 % a yes/no guess may reach); a 70 % threshold lets window / 10 stand in
    for the period even with leak-free windows; with three to six worlds per task, a
    Sun-like constant inside a 15-40 % threshold on one world is a third of the task.
    Calibrate must keep reporting them until the pairs or thresholds change."""
    tasks = _verdicts(tmp_path, "known", "is_bound,travel_time_20pct_path,total_energy,"
                      "area_swept_over_time_apo", [0])
    assert {t.verdict for t in tasks.values()} == {LEAKS}
    assert (tasks["is_bound"].rates["constant"].passed, tasks["is_bound"].rates["constant"].n) \
        == (7, 8)
    assert tasks["travel_time_20pct_path"].rates["window-guess"].passed == 2
    assert tasks["total_energy"].rates["constant"].passed == 2
    assert tasks["area_swept_over_time_apo"].rates["constant"].passed == 1
