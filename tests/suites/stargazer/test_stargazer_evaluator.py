"""Stargazer evaluator: the published rule v1 (with its matching loophole), our strict
v2, each criterion's edge cases, checked against hand computations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from discoverygym.physics.rv_kepler import rv_keplerian, rv_total
from discoverygym.suites.stargazer import scoring as ev

T_REF = 0.0
TRUTH2 = np.array([[12.0, 20.0, 0.1, 1.0, 2.0],
                   [45.0, 12.0, 0.2, 4.0, 0.5]])


def _context(truth=TRUTH2, n=80, sigma=1.0, noise=None, labels=None, offsets=None,
             extra_var=0.0, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 150, n))
    t[0] = T_REF
    rv = rv_total(t, truth, T_REF)
    if noise is not None:
        rv = rv + noise
    labels = np.array(labels if labels is not None else ["inst_A"] * n)
    if offsets:
        rv = rv + np.array([offsets[x] for x in labels])
    return ev.make_context(t, rv, np.full(n, sigma), labels.tolist(), truth, T_REF,
                           np.full(n, extra_var))


def test_exact_truth_passes_both_modes_whatever_the_offsets():
    n = 80
    labels = ["inst_A"] * 40 + ["inst_B"] * 40
    noise = np.random.default_rng(3).normal(0, 1.0, n)
    ctx = _context(noise=noise, labels=labels, offsets={"inst_A": 17.0, "inst_B": -4.0})
    verdicts = ev.evaluate(ctx, TRUTH2)
    for mode in ev.MODES:
        assert verdicts[mode].passed, verdicts[mode]
        assert verdicts[mode].match == pytest.approx(1.0)


def test_v1_matching_loophole_and_v2_closes_it():
    ctx = _context(noise=np.random.default_rng(4).normal(0, 1.0, 80))
    absurd = np.array([TRUTH2[0], [2.9, 0.01, 0.85, 0.0, 0.0]])   # right + nonsense
    stats = ev.fit_statistics(ctx, absurd)
    v1, v2 = ev.verdict_v1(stats), ev.verdict_v2(stats)
    assert v1.match == pytest.approx(1.0) and v1.criteria["match"]
    assert v2.match == pytest.approx(0.5) and not v2.criteria["match"]
    # a nearly right second planet scores worse than the absurd one under v1
    near = np.array([TRUTH2[0], [45.0 * 1.4, 12.0, 0.2, 4.0, 0.5]])
    v1_near = ev.verdict_v1(ev.fit_statistics(ctx, near))
    assert v1_near.n_kept_pairs == 2 and v1_near.match < v1.match


def _stats(distances, n_true, n_guess, rms=1.0, sigma=1.0, norm_rms=1.0, dbic=1.0):
    d = np.asarray(distances, dtype=float).reshape(n_true, n_guess)
    rows, cols = ev.linear_sum_assignment(d)
    return ev.FitStatistics(rms_ms=rms, normalised_rms=norm_rms, delta_bic_per_point=dbic,
                            distances=d, pairs=tuple(zip(rows.tolist(), cols.tolist(),
                                                         strict=True)),
                            n_true=n_true, n_guess=n_guess, median_sigma_ms=sigma)


def test_match_edge_cases():
    ln08 = -np.log(0.8)
    assert ev.verdict_v1(_stats([ln08 - 1e-9], 1, 1)).criteria["match"]
    assert not ev.verdict_v1(_stats([ln08 + 1e-9], 1, 1)).criteria["match"]
    # pairs with d > 5 are dropped (v1: they vanish from the mean; v2: they count as 0)
    kept = ev.verdict_v1(_stats([[0.0, 9], [9, 5.0]], 2, 2))
    dropped = ev.verdict_v1(_stats([[0.0, 9], [9, 5.0 + 1e-9]], 2, 2))
    assert kept.n_kept_pairs == 2 and dropped.n_kept_pairs == 1
    assert kept.match == pytest.approx((1 + np.exp(-5)) / 2) and dropped.match == 1.0
    assert ev.verdict_v2(_stats([[0.0, 9], [9, 5.0 + 1e-9]], 2, 2)).match == 0.5
    # no kept pair at all: 0 minus the count penalty
    assert ev.verdict_v1(_stats([[7.0]], 1, 1)).match == 0.0
    assert ev.verdict_v1(_stats([[0.0, 0.1]], 1, 2)).match == pytest.approx(0.75)


def test_count_edge_cases():
    one_of_two = ev.verdict_v1(_stats([[0.0], [3.0]], 2, 1))
    assert not one_of_two.criteria["count"]
    assert one_of_two.match == pytest.approx(1.0 - 0.25)        # one pair only
    assert ev.verdict_v2(_stats([[0.0], [3.0]], 2, 1)).match == pytest.approx(0.5 - 0.25)
    extra = ev.verdict_v2(_stats([[0.0, 6.0, 6.0]], 1, 3))
    assert not extra.criteria["count"] and extra.match == pytest.approx(0.5)
    assert ev.verdict_v2(_stats([[0.0]], 1, 1)).criteria["count"]


def test_planets_recovered_one_by_one():
    ln08 = -np.log(0.8)
    # Hungarian pairs (0, 0) and (1, 1): the first within the threshold, the second not
    assert ev.n_recovered(_stats([[ln08 - 1e-9, 9.0], [9.0, ln08 + 1e-9]], 2, 2)) == 1
    # an extra guess recovers nothing; a missing one leaves its truth unrecovered
    assert ev.n_recovered(_stats([[0.0, 6.0, 6.0]], 1, 3)) == 1
    assert ev.n_recovered(_stats([[0.0], [3.0]], 2, 1)) == 1
    assert ev.n_recovered(_stats([[0.1, 0.0], [0.0, 0.1]], 2, 2)) == 2


def test_rms_edge_cases_v1_and_v2():
    assert ev.verdict_v1(_stats([0.0], 1, 1, rms=1.5, sigma=1.0)).criteria["rms"]
    assert not ev.verdict_v1(_stats([0.0], 1, 1, rms=1.5 + 1e-9, sigma=1.0)).criteria["rms"]
    assert ev.verdict_v2(_stats([0.0], 1, 1, norm_rms=1.5)).criteria["rms"]
    assert not ev.verdict_v2(_stats([0.0], 1, 1, norm_rms=1.5 + 1e-9)).criteria["rms"]


def test_rms_statistics_by_hand():
    # residual +-a alternating (zero mean, so the fitted offset is zero): rms = a
    n, a = 80, 2.0
    resid = a * np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    ctx = _context(noise=resid, sigma=1.0)
    stats = ev.fit_statistics(ctx, TRUTH2)
    assert stats.rms_ms == pytest.approx(a)
    assert stats.normalised_rms == pytest.approx(a)        # / sqrt(sigma^2 + 0)
    assert not ev.verdict_v1(stats).criteria["rms"]         # 2.0 > 1.5 x 1.0
    # v2 allows for the task's extra noise (jitter, activity): s^2 = 1 + 3
    ctx_noisy = _context(noise=resid, sigma=1.0, extra_var=3.0)
    stats2 = ev.fit_statistics(ctx_noisy, TRUTH2)
    assert stats2.normalised_rms == pytest.approx(1.0)
    assert ev.verdict_v2(stats2).criteria["rms"] and not ev.verdict_v1(stats2).criteria["rms"]


def test_bic_by_hand_and_its_edge():
    n = 60
    noise = np.random.default_rng(5).normal(0, 1.0, n)
    truth = TRUTH2[:1]
    ctx = _context(truth=truth, n=n, noise=noise, sigma=1.0)
    jitter = np.array([0.5])
    stats = ev.fit_statistics(ctx, truth, jitter)
    var = 1.0 + 0.25
    r = ctx.rv_ms - rv_total(ctx.times_days, truth, T_REF)
    r -= r.mean()                                    # equal weights: WLS offset = mean
    r0 = ctx.rv_ms - ctx.rv_ms.mean()
    lnl = -0.5 * np.sum(r ** 2 / var + np.log(2 * np.pi * var))
    lnl0 = -0.5 * np.sum(r0 ** 2 / var + np.log(2 * np.pi * var))
    bic, bic0 = -2 * lnl + 6 * np.log(n), -2 * lnl0 + 1 * np.log(n)
    assert stats.delta_bic_per_point == pytest.approx((bic0 - bic) / n)
    # a planet that explains nothing costs 5 ln n: Delta BIC / n < 0, the criterion fails
    flat = np.array([[3.0, 1e-9, 0.0, 0.0, 0.0]])
    stats_flat = ev.fit_statistics(_context(truth=truth, n=n, noise=noise), flat)
    assert stats_flat.delta_bic_per_point == pytest.approx(-5 * np.log(n) / n, rel=1e-6)
    assert not ev.verdict_v1(stats_flat).criteria["bic"]


def test_weighted_offsets_use_quoted_sigma_and_submitted_jitter():
    n = 40
    labels = ["inst_A"] * 20 + ["inst_B"] * 20
    resid = np.random.default_rng(6).normal(0, 3.0, n)
    ctx = _context(truth=TRUTH2[:1], n=n, noise=resid, labels=labels)
    err = np.where(np.arange(n) % 3 == 0, 1.0, 2.0)
    ctx = ev.make_context(ctx.times_days, ctx.rv_ms, err, labels, TRUTH2[:1], T_REF, 0.0)
    jitter = np.array([0.7, 2.0])
    stats = ev.fit_statistics(ctx, TRUTH2[:1], jitter)
    expected = []
    for k, lab in enumerate(("inst_A", "inst_B")):
        sel = np.array(labels) == lab
        w = 1.0 / (err[sel] ** 2 + jitter[k] ** 2)
        expected.append(resid[sel] - np.sum(w * resid[sel]) / np.sum(w))
    assert stats.rms_ms == pytest.approx(np.sqrt(np.mean(np.concatenate(expected) ** 2)))


def test_distance_by_hand_and_hungarian_against_brute_force():
    ctx = _context()
    g = np.array([[12.3, 18.0, 0.15, 1.1, 2.1]])
    d = ev.match_distances(ctx, g)[0, 0]
    t = ctx.times_days
    diff = (rv_keplerian(t, *g[0], T_REF) - rv_keplerian(t, *TRUTH2[0], T_REF))
    rv_term = np.sqrt(np.mean((diff - diff.mean()) ** 2)) / 20.0
    ref = 4 * rv_term + abs(np.log(12.3 / 12.0)) + 0.5 * abs(np.log(18.0 / 20.0)) + 0.5 * 0.05
    assert d == pytest.approx(ref)
    rng = np.random.default_rng(8)
    truth3 = np.column_stack([[5.0, 11.0, 30.0], [5.0, 9.0, 3.0], [0.1, 0.0, 0.3],
                              [1.0, 2.0, 3.0], [0.0, 1.0, 2.0]])
    ctx3 = _context(truth=truth3)
    for _ in range(5):
        guess = truth3 * rng.uniform(0.8, 1.25, truth3.shape)
        guess[:, 2] = np.clip(guess[:, 2], 0, 0.9)
        guess = guess[rng.permutation(3)]
        stats = ev.fit_statistics(ctx3, guess)
        best = min(sum(stats.distances[i, p[i]] for i in range(3))
                   for p in itertools.permutations(range(3)))
        assert sum(stats.distances[r, c] for r, c in stats.pairs) == pytest.approx(best)


def test_order_of_submitted_planets_does_not_matter():
    ctx = _context(noise=np.random.default_rng(9).normal(0, 1, 80))
    a = ev.evaluate(ctx, TRUTH2 * [1.01, 0.97, 1, 1, 1])
    b = ev.evaluate(ctx, (TRUTH2 * [1.01, 0.97, 1, 1, 1])[::-1])
    for mode in ev.MODES:
        assert a[mode].to_dict() == b[mode].to_dict()
