"""Stargazer generator: the RV curve against an independent reference, determinism by
seed, the difficulty rubric, the detection gate and the bank. (The Kepler solver
itself: tests/physics/test_kepler.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import rebound

from discoverygym.physics import rv_kepler as kepler
from discoverygym.suites.stargazer import bank, difficulty, generator
from discoverygym.suites.stargazer.generator import generate_task
from discoverygym.suites.stargazer.scoring import fit_statistics, verdict_v1, verdict_v2
from discoverygym.suites.stargazer.task import RVTask


@pytest.mark.parametrize("ecc,omega", [(0.0, 0.3), (0.3, 2.0), (0.8, 4.5)])
def test_rv_curve_matches_rebound_two_body_orbit(ecc, omega):
    # An independent construction: REBOUND's own orbit of a light planet; the star's
    # line-of-sight velocity must equal the Keplerian formula with the exact two-body K.
    star, m_planet, period, lam, t_ref = 1.0, 1e-6, 37.0, 1.1, 5.0
    sim = rebound.Simulation()
    sim.units = ("day", "AU", "Msun")
    sim.add(m=star)
    sim.add(m=m_planet, P=period, e=ecc, inc=np.pi / 2, Omega=0.0, omega=omega, l=lam)
    sim.move_to_com()
    orbit = sim.particles[1].orbit(primary=sim.particles[0])
    n_rad_day = 2 * np.pi / period
    k_exact = m_planet / (star + m_planet) * n_rad_day * orbit.a / np.sqrt(1 - ecc ** 2)
    k_ms = k_exact * 1.495978707e11 / 86400.0
    t = np.linspace(t_ref, t_ref + 2.3 * period, 57)
    rv_rebound = []
    sim.t = t_ref
    for ti in t:
        sim.integrate(ti, exact_finish_time=1)
        rv_rebound.append(-sim.particles[0].vz * 1.495978707e11 / 86400.0)
    ours = kepler.rv_keplerian(t, period, k_ms, ecc, omega, lam, t_ref)
    assert np.max(np.abs(ours - np.array(rv_rebound))) < 1e-6 * k_ms
    # and the multi-planet vectorised form agrees with the single-planet one
    two = kepler.rv_total(t, [[period, k_ms, ecc, omega, lam], [3.3, 2.0, 0.1, 0.2, 0.3]], t_ref)
    assert np.allclose(two, ours + kepler.rv_keplerian(t, 3.3, 2.0, 0.1, 0.2, 0.3, t_ref))
    # our N-body signal helper agrees too
    msini_mjup = m_planet / generator.MJUP_MSUN
    nb = generator.nbody_rv_ms(t, star, np.array([[period, k_ms, ecc, omega, lam]]),
                               np.array([msini_mjup]), t_ref)
    assert np.max(np.abs(nb - ours)) < 1e-6 * k_ms


def test_semi_amplitude_formula_and_inverse():
    # 1 MJup, 1 Msun, 1 yr, circular: the reference constant
    assert kepler.semi_amplitude_ms(1.0, 1.0, 365.25, 0.0) == pytest.approx(28.4329)
    k = kepler.semi_amplitude_ms(0.3, 0.8, 12.0, 0.4)
    assert kepler.m_sin_i_mjup(k, 0.8, 12.0, 0.4) == pytest.approx(0.3)


def test_periastron_time_to_mean_longitude():
    # at t = tp the mean anomaly is zero, so l = omega
    assert kepler.mean_longitude_from_periastron(12.0, 5.0, 1.0, 12.0) == pytest.approx(1.0)
    assert kepler.mean_longitude_from_periastron(12.0, 5.0, 1.0, 13.25) == pytest.approx(
        1.0 + np.pi / 2)


def test_generation_is_a_pure_function_of_the_seed():
    a, b, c = generate_task(123), generate_task(123), generate_task(124)
    for name in ("times_days", "rv_ms", "err_ms", "instrument", "truth", "truth_jitter_ms"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert a.star_mass_msun == b.star_mass_msun and a.difficulty == b.difficulty
    assert not np.array_equal(a.rv_ms, c.rv_ms)


def test_generation_with_activity_and_several_instruments_is_deterministic():
    # find seeds exercising the GP and multi-instrument paths, then regenerate them
    seen_gp = seen_multi = None
    for seed in range(200):
        task = generate_task(seed)
        if seen_gp is None and task.meta["activity"] is not None:
            seen_gp = seed
        if seen_multi is None and len(task.labels) > 1:
            seen_multi = seed
        if seen_gp is not None and seen_multi is not None:
            break
    assert seen_gp is not None and seen_multi is not None
    for seed in (seen_gp, seen_multi):
        assert np.array_equal(generate_task(seed).rv_ms, generate_task(seed).rv_ms)
    multi = generate_task(seen_multi)
    assert multi.labels[0] == "inst_A"
    # each instrument keeps a constant quoted sigma and at least 10 epochs
    for lab in multi.labels:
        sel = multi.instrument == lab
        assert sel.sum() >= generator.MIN_EPOCHS_PER_INSTRUMENT
        assert np.unique(multi.err_ms[sel]).size == 1


def test_generated_tasks_follow_the_priors():
    tasks = [generate_task(s) for s in range(150)]
    for t in tasks:
        assert 0.7 <= t.star_mass_msun <= 1.3
        assert 40 <= t.times_days.size <= 80
        assert np.all(np.diff(t.times_days) >= 0)
        p = np.sort(t.truth[:, 0])
        assert 2.0 <= p[0] <= 300.0
        assert np.all(p[1:] / p[:-1] >= 1.1)
        assert np.all((t.truth[:, 2] >= 0) & (t.truth[:, 2] <= 0.9))
        assert 1 <= t.truth.shape[0] <= 4
        assert np.all((t.err_ms >= 10 ** -0.3 - 1e-9) & (t.err_ms <= 10 ** 0.7 + 1e-9))
        # K consistent with m sin i through the published formula
        for row, m in zip(t.truth, t.meta["m_sin_i_mjup"], strict=True):
            assert row[1] == pytest.approx(kepler.semi_amplitude_ms(m, t.star_mass_msun,
                                                                    row[0], row[2]))
        assert generator.truth_is_detectable(t)
    counts = np.bincount([t.truth.shape[0] for t in tasks], minlength=5)[1:]
    assert counts[0] > counts[1] > counts[2]      # 0.5 / 0.3 / 0.15 / 0.05


def test_difficulty_rubric_terms():
    # two planets at 2:1 (one resonance), K/noise = 1.5, coverage 2.5, 45 epochs, GP 0.7 sigma_w
    d = difficulty.difficulty([10.0, 20.2], [3.0, 6.0], 1.5, 0.5, 25.0, 45, 1.05)
    assert d["terms"] == {"planets": 2, "snr": 2, "resonances": 1, "coverage": 1,
                          "epochs": 2, "activity": 2}
    assert d["difficulty"] == 10 and difficulty.tier_of(d["difficulty"]) == "hard"
    easy = difficulty.difficulty([5.0], [50.0], 1.0, 0.2, 16.0, 80, None)
    assert easy["raw_score"] == 1 and difficulty.tier_of(easy["difficulty"]) == "easy"
    assert difficulty.snr_term(5.0) == 1 and difficulty.snr_term(5.01) == 0
    assert difficulty.coverage_term(3.0) == 0 and difficulty.coverage_term(1.99) == 2
    assert difficulty.epochs_term(50) == 1 and difficulty.epochs_term(29) == 3
    assert difficulty.activity_term(0.49, 1.0) == 1 and difficulty.activity_term(1.0, 1.0) == 3
    assert difficulty.count_resonances([1.0, 2.0, 3.0, 4.5]) == 2      # capped at 2
    assert difficulty.count_resonances([10.0, 16.6]) == 1              # 5:3
    assert difficulty.count_resonances([10.0, 17.5]) == 0


def test_default_bank_has_the_specified_tiers_and_is_deterministic():
    seeds = bank.bank_seeds(bank.DEFAULT_BANK_SEED)
    assert {k: len(v) for k, v in seeds.items()} == {"easy": 20, "medium": 40, "hard": 40}
    for tier, tier_seeds in seeds.items():
        assert list(tier_seeds) == sorted(tier_seeds)
        for k in (0, len(tier_seeds) - 1):
            task = bank.bank_task(f"{tier}-{k:03d}")
            assert task.tier == tier and task.task_id == f"{tier}-{k:03d}"
    other = bank.bank_task("bank7-hard-003")
    assert other.seed // bank.SEED_STRIDE == 7 and other.tier == "hard"
    with pytest.raises(ValueError):
        bank.bank_task("easy-020")


def test_nbody_option_for_resonant_systems():
    # seed 4 draws a near-resonant pair; the N-body signal replaces the Keplerian sum but
    # the system, schedule and noise draws are the same (the option consumes no randomness)
    kep = generator.generate_task(4)
    assert kep.difficulty["terms"]["resonances"] > 0 and kep.meta["engine"] == "keplerian"
    nb = generator.generate_task(4, nbody=True)
    assert nb.meta["engine"] == "rebound"
    assert np.array_equal(nb.times_days, kep.times_days) and np.array_equal(nb.truth, kep.truth)
    diff = np.abs(nb.rv_ms - kep.rv_ms)
    # light planets: interactions perturb the signal a little, but not by nothing
    assert 0 < diff.max() < 0.2 * kep.truth[:, 1].max()
    assert np.array_equal(generator.generate_task(4, nbody=True).rv_ms, nb.rv_ms)


def _hand_task(err_ms, noise_ms, labels, k_ms=20.0):
    t = np.linspace(0.0, 60.0, len(err_ms))
    truth = np.array([[9.0, k_ms, 0.1, 1.0, 2.0]])
    rv = kepler.rv_total(t, truth, t[0]) + noise_ms
    return RVTask(task_id="hand", tier="easy", source="synthetic", star_mass_msun=1.0,
                  times_days=t, rv_ms=rv, err_ms=np.asarray(err_ms, dtype=float),
                  instrument=np.asarray(labels), truth=truth,
                  truth_jitter_ms=np.zeros(len(set(labels))),
                  extra_var_ms2=np.zeros(len(err_ms)))


def test_detection_gate_needs_the_truth_to_pass_both_modes():
    rng = np.random.default_rng(11)
    # two instruments: 30 epochs quoted (and drawn) at 0.5 m/s, 20 at 4 m/s. v2 compares
    # each residual with its own sigma and passes; v1's unweighted RMS (~2.6 m/s) against
    # 1.5 x the median quoted sigma (0.75 m/s) fails, so the task is not solvable in v1
    err = np.r_[np.full(30, 0.5), np.full(20, 4.0)]
    labels = ["inst_A"] * 30 + ["inst_B"] * 20
    task = _hand_task(err, err * rng.standard_normal(50), labels)
    stats = fit_statistics(task.context(), task.truth, task.truth_jitter_ms)
    assert verdict_v2(stats).criteria["rms"] and not verdict_v1(stats).criteria["rms"]
    assert not generator.truth_is_detectable(task)
    # the same noise level on both instruments passes both modes
    same = _hand_task(np.full(50, 0.5), 0.5 * rng.standard_normal(50), labels)
    assert generator.truth_is_detectable(same)
    # a signal far below the noise fails the bic criterion and is rejected too
    weak = _hand_task(np.full(50, 5.0), 5.0 * rng.standard_normal(50), labels, k_ms=0.05)
    assert not generator.truth_is_detectable(weak)


def test_bank_cache_is_keyed_by_the_generator_version():
    path = bank.cache_dir("stargazer", "banks") / (
        f"bank-{bank.DEFAULT_BANK_SEED}-g{generator.GENERATOR_VERSION}.json")
    bank.bank_seeds(bank.DEFAULT_BANK_SEED)
    assert path.exists()
