"""Procedural gravity worlds under the leak-free setup: the yes/no questions whose answer
the kind of world gives away (is_bound, kepler_3rd_law) are asked of the world or of
its twin with even odds, so a blind answer is right about half the time, as on the
published worlds; `--setup published` plays the drawn world as before; and
`--world-seeds` plans (and so calibrates) over many procedural worlds."""

from __future__ import annotations

import json

import pytest

from discoverygym.calibrate import LEAKS, MARGIN, calibrate
from discoverygym.suites.gravity.suite import GravitySuite, leak_free_procedural_world
from discoverygym.suites.gravity.tasks import TASKS, tasks_for_world
from discoverygym.suites.gravity.worlds import (
    MODIFIED_ALPHA,
    mirrored_law,
    procedural_world,
)

SUITE = GravitySuite()
WORLD_SEEDS = range(40)
LEAK_LINE = 0.5 + MARGIN  # calibrate's verdict: a trivial agent above this leaks


def _worlds(task_id: str) -> list[int]:
    return [n for n in WORLD_SEEDS if TASKS[task_id].applies_to(procedural_world(n))]


# ---- the twins ---------------------------------------------------------------------------
@pytest.mark.parametrize("world_seed", [0, 9])  # Newtonian, modified law
def test_the_law_twin_is_of_the_other_law_and_keeps_the_window(world_seed):
    world = procedural_world(world_seed)
    twin = mirrored_law(world, seed=3)
    assert twin.newtonian == (not world.newtonian)
    assert TASKS["kepler_3rd_law"].truth(twin) is (not TASKS["kepler_3rd_law"].truth(world))
    assert TASKS["kepler_3rd_law"].applies_to(twin)
    if not twin.newtonian:
        assert MODIFIED_ALPHA[0] <= abs(twin.force_alpha) <= MODIFIED_ALPHA[1]
    # same stars, start and e; the window's length in seconds says nothing
    assert (twin.m1_kg, twin.m2_kg, twin.eccentricity, twin.drift_ms) == (
        world.m1_kg, world.m2_kg, world.eccentricity, world.drift_ms)
    assert twin.duration_s == pytest.approx(world.duration_s, rel=1e-12)
    assert mirrored_law(twin, seed=3).newtonian == world.newtonian


def test_a_drag_world_has_no_law_twin():
    with pytest.raises(ValueError, match="drag"):
        mirrored_law(procedural_world(5), seed=0)


# ---- blind answers, from the truths (fast, many seeds) ------------------------------------
@pytest.mark.parametrize("task_id", ["is_bound", "kepler_3rd_law"])
def test_a_blind_answer_is_right_about_half_the_time_on_procedural_worlds(task_id):
    """Over world seeds 0-39: the drawn worlds mostly answer `true` (is_bound 22 of 26,
    kepler_3rd_law 22 of 29: a blind `true` would leak); the leak-free setup's twins
    bring it to about half over episode seeds 0-9."""
    task = TASKS[task_id]
    seeds = _worlds(task_id)
    drawn = [bool(task.truth(procedural_world(n))) for n in seeds]
    assert (len(drawn), sum(drawn)) == {"is_bound": (26, 22), "kepler_3rd_law": (29, 22)}[task_id]
    assert sum(drawn) / len(drawn) > LEAK_LINE
    asked = [bool(task.truth(leak_free_procedural_world(procedural_world(n), task, s)))
             for n in seeds for s in range(10)]
    # the README's figures: 114 of 260 (44 %) and 138 of 290 (48 %)
    assert (len(asked), sum(asked)) == {"is_bound": (260, 114),
                                        "kepler_3rd_law": (290, 138)}[task_id]
    assert 0.4 <= sum(asked) / len(asked) <= 0.6


# ---- blind answers, through the tools -----------------------------------------------------
def _blind_pass_rates(setup: str) -> dict[bool, float]:
    """Each procedural is_bound episode of world seeds 0-39 (episode seed 0), answered
    `true` and `false` through the submit tool without a single observation."""
    specs = SUITE.episodes(world_seeds="0-39", tasks="is_bound", setup=setup)
    assert len(specs) == 26
    rates = {}
    for answer in (True, False):
        passed = 0
        for spec in specs:
            episode = SUITE.episode(spec.task_id, seed=spec.seed, **spec.options)
            result = episode.view().call("submit", {"answer": answer})
            assert not result.is_error
            passed += int(episode.record(agent="blind").passed)
        rates[answer] = passed / len(specs)
    return rates


@pytest.mark.slow
def test_a_blind_agent_no_longer_passes_procedural_is_bound():
    """Before: `true` passed 22 of 26 (85 %). Now: 10 of 26 for `true`, 16 of 26 for
    `false` on seed 0; neither is above the calibration's leak line."""
    published = _blind_pass_rates("published")
    assert published[True] == pytest.approx(22 / 26) and published[True] > LEAK_LINE
    leak_free = _blind_pass_rates("leak-free")
    assert leak_free == {True: pytest.approx(10 / 26), False: pytest.approx(16 / 26)}
    assert max(leak_free.values()) <= LEAK_LINE


# ---- what does not change ----------------------------------------------------------------
def test_the_published_setup_plays_the_drawn_world_and_keeps_its_records():
    for task_id in ("is_bound", "kepler_3rd_law", "travel_time_20pct_path"):
        for n in _worlds(task_id)[:4]:
            episode = SUITE.episode(task_id, world_seed=n, seed=1, setup="published")
            assert episode._world_spec == procedural_world(n)  # tests may touch internals
            assert episode.options == {"world_seed": n, "protocol": "budget-obs-100",
                                       "setup": "published"}
    # the plan's options rebuild the same episode (its setup included)
    for spec in SUITE.episodes(world_seeds="0-39", tasks="is_bound", setup="published"):
        episode = SUITE.episode(spec.task_id, seed=spec.seed, **spec.options)
        assert episode._world_spec == procedural_world(spec.options["world_seed"])


def test_virial_theorem_is_left_unbalanced_under_the_leak_line():
    """The README's figure: `true` on 110 of 180 procedural virial_theorem episodes."""
    task = TASKS["virial_theorem"]
    asked = [bool(task.truth(leak_free_procedural_world(procedural_world(n), task, s)))
             for n in _worlds("virial_theorem") for s in range(10)]
    assert (len(asked), sum(asked)) == (180, 110)
    assert sum(asked) / len(asked) <= LEAK_LINE


def test_the_leak_free_setup_twins_only_the_yes_no_questions_and_is_stricter_on_a_guess():
    world = procedural_world(0)
    for task in tasks_for_world(world):
        if not (task.balanced_boundness or task.balanced_law):
            for seed in range(3):
                assert leak_free_procedural_world(world, task, seed) == world
    n = _worlds("travel_time_20pct_path")[0]
    default = SUITE.episode("travel_time_20pct_path", world_seed=n)
    published = SUITE.episode("travel_time_20pct_path", world_seed=n, setup="published")
    assert default.options["setup"] == "leak-free"
    for episode, threshold in ((default, 0.10), (published, 0.70)):
        episode.view().call("submit", {"answer": episode._truth() * 1.15})
        record = episode.record()
        assert record.threshold == threshold and record.passed == (threshold == 0.70)


def test_the_twin_is_not_named_where_the_agent_looks():
    seed = next(s for s in range(20) if SUITE.episode("is_bound", world_seed=0, seed=s)
                .world != "proc-0")
    episode = SUITE.episode("is_bound", world_seed=0, seed=seed)
    assert episode.world == "proc-0-unbound" and episode.options["world_seed"] == 0
    view = episode.view()
    seen = "\n".join([view.prompt, json.dumps(view.tools()), repr(view.workspace())])
    assert "proc-0" not in seen and "unbound" not in seen and "twin" not in seen


# ---- --world-seeds -------------------------------------------------------------------------
def test_world_seeds_plan_every_applicable_task_on_each_world():
    parsed = SUITE.parse_options({"world-seeds": "0-3"})
    assert parsed == {"world_seeds": [0, 1, 2, 3]}
    specs = SUITE.episodes(**parsed)
    expected = [(n, t.id) for n in range(4) for t in tasks_for_world(procedural_world(n))]
    assert [(s.options["world_seed"], s.task_id) for s in specs] == expected
    assert specs == [s for n in range(4) for s in SUITE.episodes(world_seed=n)]
    with pytest.raises(ValueError, match="not both"):
        SUITE.episodes(world_seed=1, world_seeds="0-3")
    with pytest.raises(ValueError, match="not both"):
        SUITE.episodes(worlds="A", world_seeds="0-3")
    for bad in ("x", "3-1", "0-1000000000000"):
        with pytest.raises(ValueError):
            SUITE.parse_options({"world-seeds": bad})
    with pytest.raises(ValueError, match="At most"):
        SUITE.episodes(world_seeds=range(10**9))


@pytest.mark.slow
def test_calibrate_over_procedural_worlds_finds_no_leak_where_the_drawn_worlds_leak(tmp_path):
    """`discoverygym calibrate gravity --world-seeds 0-9` on the two yes/no questions the
    kind of world answers: the published setup leaks them (a blind `true` is right on 6
    of 7 worlds each), the default one does not."""
    verdicts = {}
    for setup in ("published", "leak-free"):
        result = calibrate("gravity", seeds=[0, 1], tasks="is_bound,kepler_3rd_law",
                           raw_options={"world-seeds": "0-9", "setup": setup},
                           runs_dir=tmp_path / setup, executor="serial")
        assert not result.infrastructure_failures
        verdicts[setup] = {t.task_id: t.verdict for t in result.tasks}
    assert verdicts["published"] == {"is_bound": LEAKS, "kepler_3rd_law": LEAKS}
    assert LEAKS not in verdicts["leak-free"].values(), verdicts
