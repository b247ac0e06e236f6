"""The shared Kepler solver (physics/kepler.py) against an independent reference:
bisection in 50-digit arithmetic (mpmath) on a bracket that always holds the root,
over ordinary and extreme eccentricities and mean anomalies, from either starting guess
(Danby's, Markley's) and from a caller's start; the exact limits e = 0 (E = M) and M = 0
or pi (E = M for any e); agreement with the solver it replaced (whole-array Newton until
every step is below 1e-12) and the residual E - e sin E - M on e in [0, 0.99]; each
element of a large array stopping on its own; hyperbolic orbits likewise; bad input
refused."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from discoverygym.physics import kepler
from discoverygym.physics.kepler import (
    TWO_PI,
    eccentric_anomaly,
    eccentric_anomaly_sin_cos,
    hyperbolic_anomaly,
    true_anomaly,
)

mpmath.mp.dps = 50
EPS = np.finfo(float).eps
TINY = 1e-50  # what 200 halvings leave of the bisection bracket around a root at 0


def _bisect(f, lo, hi) -> mpmath.mpf:
    """The root of an increasing f in [lo, hi], to 50 digits."""
    lo, hi = mpmath.mpf(lo), mpmath.mpf(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if f(mid) > 0 else (mid, hi)
    return (lo + hi) / 2


def _elliptic_reference(m: float, e: float) -> float:
    """E for M reduced to [0, 2 pi) exactly as the float M given: E - e sin E - M is
    increasing and changes sign on [M - e, M + e]."""
    m_red = mpmath.mpf(float(m)) % (2 * mpmath.pi)
    ecc = mpmath.mpf(float(e))
    return float(_bisect(lambda x: x - ecc * mpmath.sin(x) - m_red, m_red - 1, m_red + 1))


def _hyperbolic_reference(m: float, e: float) -> float:
    """H with e sinh H - H = M (increasing in H for e > 1); |H| <= asinh(|M| / (e - 1))."""
    mm, ecc = mpmath.mpf(float(m)), mpmath.mpf(float(e))
    bound = mpmath.asinh(abs(mm) / (ecc - 1)) + 1
    return float(_bisect(lambda x: ecc * mpmath.sinh(x) - x - mm, -bound, bound))


ECCENTRICITIES = [0.0, 1e-9, 0.1, 0.5, 0.9, 0.99, 0.999, 0.99999, 0.9999999]
MEAN_ANOMALIES = [0.0, 1e-12, 1e-6, 0.1, 1.0, np.pi - 1e-9, np.pi, 4.0, TWO_PI - 1e-6,
                  7.0, -0.5, -20.0, 1234.5]


@pytest.mark.parametrize("starter", sorted(kepler.STARTERS))
@pytest.mark.parametrize("e", ECCENTRICITIES)
def test_eccentric_anomaly_matches_high_precision_bisection(e, starter):
    ours = eccentric_anomaly(np.array(MEAN_ANOMALIES), e, starter=starter)
    for m, big_e in zip(MEAN_ANOMALIES, ours, strict=True):
        reference = _elliptic_reference(m, e)
        # What any float solver can reach: a few roundings of M, of its reduction and of
        # the terms E, e sin E, divided by dM/dE = 1 - e cos E (small near e = 1 and
        # M = 0, where the root is ill-conditioned). A solver that loses the low bits of
        # a small M (e.g. by shifting it by pi) misses this by orders of magnitude there.
        slope = 1 - e * np.cos(reference)
        terms = abs(reference) + float(np.mod(m, TWO_PI)) + abs(m)
        assert abs(big_e - reference) <= 4 * EPS * terms / slope + TINY, (m, e)


def test_eccentric_anomaly_on_random_orbits_vectorised_over_e():
    rng = np.random.default_rng(7)
    ecc = rng.uniform(0, 0.98, 300)
    mean = rng.uniform(-40, 40, 300)
    ours = eccentric_anomaly(mean, ecc)
    reference = [_elliptic_reference(m, e) for m, e in zip(mean, ecc, strict=True)]
    assert np.max(np.abs(ours - reference)) < 1e-13
    # broadcasting: one row of times, a column of eccentricities
    grid = eccentric_anomaly(mean[None, :20], ecc[:5, None])
    assert grid.shape == (5, 20)
    assert np.array_equal(grid[3], eccentric_anomaly(mean[:20], ecc[3]))


def _solver_before_issue_37(mean, ecc, tol=1e-12, max_iter=50):
    """The solver as it was before issue 37: Newton from Danby's guess on the whole
    array until every step is below tol."""
    m = np.mod(np.asarray(mean, dtype=float), TWO_PI)
    ecc = np.asarray(ecc, dtype=float)
    big_e = m + 0.85 * ecc * np.sign(np.sin(m))
    for _ in range(max_iter):
        step = (big_e - ecc * np.sin(big_e) - m) / (1.0 - ecc * np.cos(big_e))
        big_e = big_e - step
        if np.all(np.abs(step) < tol):
            break
    return big_e


# A small array (whole-array steps) and a large one (each element stops on its own)
@pytest.mark.parametrize("size", [500, 3 * kepler._COMPACT_MIN_SIZE])
@pytest.mark.parametrize("starter", sorted(kepler.STARTERS))
def test_agrees_with_the_solver_it_replaced_and_leaves_no_residual(size, starter):
    rng = np.random.default_rng(size)
    ecc = np.linspace(0.0, 0.99, size)
    mean = rng.uniform(-60.0, 60.0, size)
    old = _solver_before_issue_37(mean, ecc)
    big_e, sin_e, cos_e = eccentric_anomaly_sin_cos(mean, ecc, starter=starter)
    assert np.max(np.abs(big_e - old)) < 1e-12
    assert np.max(np.abs(big_e - ecc * np.sin(big_e) - np.mod(mean, TWO_PI))) < 1e-12
    # sin E and cos E carried from the last step are those of E, to rounding (E near
    # 2 pi is itself known to an ulp of 2 pi, 4 EPS)
    assert np.max(np.abs(sin_e - np.sin(big_e))) < 8 * EPS
    assert np.max(np.abs(cos_e - np.cos(big_e))) < 8 * EPS


def test_each_element_of_a_large_array_stops_once_converged():
    """An element of a large array gets the same Newton steps as when solved alone (a
    one-element array stops exactly when its own step is below tol): bit for bit."""
    rng = np.random.default_rng(37)
    n = 2 * kepler._COMPACT_MIN_SIZE
    ecc, mean = rng.uniform(0.0, 0.99, n), rng.uniform(-20.0, 20.0, n)
    for starter in kepler.STARTERS:
        together = eccentric_anomaly(mean, ecc, starter=starter)
        for i in rng.choice(n, 40, replace=False):
            alone = eccentric_anomaly(mean[i:i + 1], ecc[i:i + 1], starter=starter)
            assert together[i] == alone[0], (starter, i)


# (3, 80): whole-array steps; (3, 1000): each element on its own, e broadcast per row
@pytest.mark.parametrize("epochs", [80, 1000])
def test_a_start_near_the_root_converges_and_a_poor_one_falls_back(epochs):
    rng = np.random.default_rng(5)
    ecc = rng.uniform(0.0, 0.95, (3, 1))
    mean = rng.uniform(-30.0, 30.0, (3, epochs))
    reference = eccentric_anomaly(mean, ecc)
    near = eccentric_anomaly(mean + 1e-3, ecc)  # what a fitter's previous step leaves
    warm = eccentric_anomaly_sin_cos(mean, ecc, start=near)[0]
    assert np.max(np.abs(warm - reference)) < 1e-12
    for poor in (np.full(mean.shape, 50.0), np.full(mean.shape, np.nan)):
        assert np.max(np.abs(eccentric_anomaly_sin_cos(mean, ecc, start=poor)[0]
                             - reference)) < 1e-12
    # a start of another shape is ignored
    assert np.max(np.abs(eccentric_anomaly_sin_cos(mean, ecc, start=near[:, :5])[0]
                         - reference)) < 1e-12


def test_exact_limits_circular_orbit_and_apsides():
    mean = np.linspace(-10, 10, 101)
    assert np.array_equal(eccentric_anomaly(mean, 0.0), np.mod(mean, TWO_PI))
    assert np.array_equal(eccentric_anomaly(mean, 0.0, starter="markley"), np.mod(mean, TWO_PI))
    for e in (0.3, 0.9, 0.9999):
        assert eccentric_anomaly(0.0, e) == 0.0
        assert eccentric_anomaly(np.pi, e) == pytest.approx(np.pi, abs=1e-15)
    # true anomaly: nu = M on a circle; at quadrature-by-time the known closed form
    assert np.allclose(true_anomaly(np.array([0.3, 1.0, 2.0]), 0.0), [0.3, 1.0, 2.0],
                       atol=1e-15, rtol=0)
    e, big_e = 0.6, 1.2
    nu = 2 * np.arctan(np.sqrt((1 + e) / (1 - e)) * np.tan(big_e / 2))
    assert true_anomaly(big_e - e * np.sin(big_e), e) == pytest.approx(nu, abs=1e-14)


@pytest.mark.parametrize("e", [1.000001, 1.01, 1.5, 3.0, 30.0])
def test_hyperbolic_anomaly_matches_high_precision_bisection(e):
    mean = np.array([0.0, 1e-9, 0.3, 2.0, -5.0, 40.0, -300.0])
    ours = hyperbolic_anomaly(mean, e)
    for m, h in zip(mean, ours, strict=True):
        reference = _hyperbolic_reference(m, e)
        slope = e * np.cosh(reference) - 1
        assert abs(h - reference) <= 4 * EPS * (abs(reference) + abs(m)) / slope + TINY, (m, e)
    assert np.array_equal(hyperbolic_anomaly(-mean, e), -ours)  # odd in M


def test_bad_eccentricities_are_refused():
    for e in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="eccentricity"):
            eccentric_anomaly(1.0, e)
    with pytest.raises(ValueError, match="eccentricity"):
        eccentric_anomaly([1.0, 2.0], [0.5, 1.0])
    for e in (0.5, 1.0):
        with pytest.raises(ValueError, match="eccentricity"):
            hyperbolic_anomaly(1.0, e)


@pytest.mark.parametrize("e", ECCENTRICITIES[1:])
def test_markley_carries_the_sine_and_cosine_of_its_root(e, monkeypatch):
    """Markley's E comes with sin E and cos E rotated from its cubic root's (no second
    evaluation), equal to numpy's of E to rounding; Newton's confirming step then
    computes no sine, so the solve costs one sine and one cosine per element."""
    mean = np.random.default_rng(8).uniform(0.0, TWO_PI, 5000)
    big_e, sin_e, cos_e = kepler.markley_sin_cos(mean, np.float64(e))
    assert np.max(np.abs(sin_e - np.sin(big_e))) < 8 * EPS
    assert np.max(np.abs(cos_e - np.cos(big_e))) < 8 * EPS
    calls = []

    class CountingNumpy:
        def __getattr__(self, name):
            return getattr(np, name)

        def sin(self, x):
            calls.append(np.size(x))
            return np.sin(x)

    monkeypatch.setattr(kepler, "np", CountingNumpy())
    solved = eccentric_anomaly_sin_cos(mean, e, starter="markley")
    assert calls == [mean.size]
    assert np.max(np.abs(solved[0] - e * np.sin(solved[0]) - mean)) < 1e-12
