"""The scripted baselines calibrate the classical world under the paper protocol (the
measured world's own future): the Newtonian fitter must clearly beat persistence and
constant velocity under the normal law, and do worse when the law is altered. Fixed
seeds; T_max = 30 instead of 300 to keep the test fast (the dynamics after T_max do not
depend on how long the world ran before). The discovery protocol's baselines are in
test_mad_discovery.py."""

from __future__ import annotations

import statistics

import pytest

from discoverygym.core import get_suite, make_agent

SEEDS = range(8)
T_MAX = 30.0


def errors(law: str, agent: str) -> list[float]:
    suite = get_suite("mad")
    out = []
    for seed in SEEDS:
        episode = suite.episode(f"classical-{law}", seed=seed, t_max=T_MAX, protocol="paper")
        make_agent("mad", agent).solve(episode.view())
        record = episode.record(agent=agent)
        assert record.error is None and record.value is not None
        out.append(record.value)
    return out


@pytest.fixture(scope="module")
def newtonian_normal() -> list[float]:
    return errors("normal", "newtonian")


def test_newtonian_beats_last_seen_and_ballistic_on_the_normal_law(newtonian_normal):
    last_seen = errors("normal", "last-seen")
    ballistic = errors("normal", "ballistic")
    # measured on these seeds: medians 0.016 / 0.22 / 0.25
    assert statistics.median(newtonian_normal) < 0.3 * statistics.median(ballistic)
    assert statistics.median(newtonian_normal) < 0.3 * statistics.median(last_seen)
    assert statistics.fmean(newtonian_normal) < 0.5 * statistics.fmean(ballistic)
    wins = sum(n < b for n, b in zip(newtonian_normal, ballistic, strict=True))
    assert wins >= 6
    # ballistic in turn beats holding the last position
    assert statistics.fmean(ballistic) < statistics.fmean(last_seen)


@pytest.mark.parametrize("law", ["inv-r", "ripple", "combined"])
def test_newtonian_error_grows_when_the_force_law_changes(law, newtonian_normal):
    # measured medians: normal 0.016; inv-r 0.28, ripple 0.12, combined 0.22
    assert statistics.median(errors(law, "newtonian")) > 3 * statistics.median(newtonian_normal)


def test_newtonian_error_grows_under_anisotropic_inertia(newtonian_normal):
    pooled = errors("kappa10", "newtonian") + errors("kappa20", "newtonian")
    # measured: pooled median 0.040 against 0.016 for the normal law
    assert statistics.median(pooled) > 1.5 * statistics.median(newtonian_normal)


def test_baselines_play_every_icl_trial_and_answer_the_infer_variant():
    suite = get_suite("mad")
    small = {"t_max": 5.0, "n_particles": 3, "dim": 2, "protocol": "paper"}
    episode = suite.episode("classical-normal", seed=1, variant="icl", trials=2, **small)
    make_agent("mad", "newtonian").solve(episode.view())
    record = episode.record(agent="newtonian")
    assert record.value is not None and len(record.details["trial_errors"]) == 2
    assert episode.usage.cost == 2 * 180  # six all-particle high-fidelity snapshots a trial
    # Trial 1 is the plain episode of the same seed: same noise, same queries.
    plain = suite.episode("classical-normal", seed=1, **small)
    make_agent("mad", "newtonian").solve(plain.view())
    assert record.details["trial_errors"][0] == plain.record().value
    assert record.details["trial_errors"][1] != record.details["trial_errors"][0]

    episode = suite.episode("classical-infer-kappa", seed=2, **small)
    make_agent("mad", "last-seen").solve(episode.view())
    record = episode.record(agent="last-seen")
    kappa = episode._world.kappa
    assert record.answer["value"] == 10.0
    assert record.value == pytest.approx(abs(10.0 - kappa) / max(kappa, 5.0))

    episode = suite.episode("classical-normal", seed=1, variant="visual", **small)
    with pytest.raises(RuntimeError, match="visual"):
        make_agent("mad", "ballistic").solve(episode.view())
