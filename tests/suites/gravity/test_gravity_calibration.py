"""`discoverygym calibrate gravity` on a small seed set: the trivial agents, the
leak-free default setup (no leak) against the published one (the period, is_bound and
the loose or scale-bound thresholds leak)."""

from __future__ import annotations

import math

import pytest

from discoverygym.calibrate import LEAKS, VALID, calibrate
from discoverygym.suites.gravity.baselines import AGENTS, CALIBRATION
from discoverygym.suites.gravity.baselines.trivial import constant_answer, window_answer
from discoverygym.suites.gravity.constants import AU_M, G_SI, MSUN_KG, YEAR_S
from discoverygym.suites.gravity.scoring import score_answer
from discoverygym.suites.gravity.suite import leak_free_world
from discoverygym.suites.gravity.tasks import TASKS
from discoverygym.suites.gravity.worlds import PUBLISHED_WORLDS

# The tasks the window gives away under the published windows (the period and what
# follows from it alone), and tasks of the other answer types. The published setup's
# other leaks are judged on their own below; tasks a trivial agent passes now and then
# by chance are left to the full table.
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


def test_default_setup_gives_nothing_away_and_every_task_is_valid(tmp_path):
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
                      setup="published")
    for task_id in ("period", "multiply_mass_period"):
        assert tasks[task_id].verdict == LEAKS
        assert tasks[task_id].rates["window-guess"].rate == 1.0
        assert tasks[task_id].rates["constant"].passed == 0


# The tasks Gravity-Bench-v1's own pairs and thresholds give away (README, Calibration).
PUBLISHED_LEAKS = ("is_bound", "travel_time_20pct_path", "total_energy",
                   "area_swept_over_time_apo", "area_swept_over_time_peri")


def _trivial_pass_rates(setup: str, seeds: range) -> dict[str, tuple[float, float]]:
    """Pass rates of the constant and window guesses on the published pairs of
    PUBLISHED_LEAKS under `setup`, scored against the truth of the world each episode
    plays (no simulation: the trivial agents never observe)."""
    rates = {}
    for task_id in PUBLISHED_LEAKS:
        task = TASKS[task_id]
        info = {"id": task_id, "answer_type": task.answer_type, "answer_unit": task.unit}
        threshold = task.threshold("budget-obs-100", setup)
        passed, n = [0, 0], 0
        for world_id in task.worlds:
            for seed in seeds:
                world = PUBLISHED_WORLDS[world_id]
                if setup == "leak-free":
                    world = leak_free_world(world, task, seed)
                truth = task.truth(world)
                for k, guess in enumerate((constant_answer(info),
                                           window_answer(info, world.duration_s))):
                    passed[k] += score_answer(guess, truth, answer_type=task.answer_type,
                                              threshold=threshold).passed
                n += 1
        rates[task_id] = (passed[0] / n, passed[1] / n)
    return rates


def test_the_published_leaks_are_closed_by_default_over_many_seeds():
    """Over seeds 0-99 no fixed guess reaches the calibration ceiling (chance + 20 %) on
    the tasks the published setup gives away, while under `published` it does, as
    Gravity-Bench-v1 published them (seed-independent there)."""
    default = _trivial_pass_rates("leak-free", range(100))
    for task_id, rates in default.items():
        ceiling = 0.7 if TASKS[task_id].answer_type == "boolean" else 0.2
        assert max(rates) <= ceiling - 0.03, (task_id, rates)
    assert 0.4 <= default["is_bound"][0] <= 0.6  # a balanced yes/no question
    published = _trivial_pass_rates("published", range(1))
    assert published["is_bound"][0] == 7 / 8
    assert published["total_energy"][0] == 2 / 6
    assert published["area_swept_over_time_apo"][0] == 1 / 3
    assert published["travel_time_20pct_path"][0] == 1 / 3


def test_the_published_leaks_are_valid_by_default_and_leak_under_published(tmp_path):
    """End to end through `discoverygym calibrate` on seeds 0-1: the oracle passes
    every episode of the five tasks, no trivial agent passes above the ceiling by
    default, and the published setup keeps Gravity-Bench-v1's leaks."""
    tasks = ",".join(PUBLISHED_LEAKS)
    default = _verdicts(tmp_path, "default", tasks, [0, 1])
    assert {t.verdict for t in default.values()} == {VALID}, \
        {t.task_id: t.reason for t in default.values()}
    for task in default.values():
        assert task.rates["expert-adaptive"].rate == 1.0
    published = _verdicts(tmp_path, "published", tasks, [0, 1], setup="published")
    assert {t.verdict for t in published.values()} == {LEAKS}
    assert published["is_bound"].rates["constant"].passed == 14  # 7 of 8 worlds, twice
