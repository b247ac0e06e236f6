"""NatureGym family `epidemic-forecast` (biomedical modeling, forecasting): the renewal
equation, the Cori et al. estimator and its projection checked against independent
references (a numerically integrated posterior, the Euler-Lotka growth rate), the
references' roles, and one package generated and verified byte for byte."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from discoverygym.naturegym.families import get_family
from discoverygym.naturegym.families.biomedical_modeling import epidemic_forecast as ef
from discoverygym.naturegym.generate import accept, draw_scores
from discoverygym.naturegym.metrics import score_outputs

FAMILY = "epidemic-forecast"


def test_generation_interval_is_a_discretised_gamma():
    w = ef.generation_interval(6.0, 2.5)
    assert w[0] == 0.0 and w.sum() == pytest.approx(1.0)
    mean = float(np.dot(np.arange(len(w)), w))
    # the mass of (k-1, k] sits at k: the discrete mean is about half a day above
    assert mean == pytest.approx(stats.gamma(5.76, scale=6.0 / 5.76).mean() + 0.5, abs=0.3)


def test_cori_estimate_is_the_posterior_mean_of_a_numerical_integration():
    rng = np.random.default_rng(3)
    w = ef.generation_interval(5.0, 2.0)
    cases = rng.poisson(50, 40).astype(float)
    estimate = ef.cori_r(cases, w)
    incidence = cases[-7:]
    pressure = np.array([ef.infection_pressure(cases, w, t) for t in range(33, 40)])

    def log_post(r):
        return (stats.gamma.logpdf(r, 1.0, scale=5.0)
                + stats.poisson.logpmf(incidence, r * pressure).sum())

    peak = -optimize.minimize_scalar(lambda r: -log_post(r), bounds=(0.01, 5),
                                     method="bounded").fun
    num = integrate.quad(lambda r: r * np.exp(log_post(r) - peak), 0.01, 5, points=[1])[0]
    den = integrate.quad(lambda r: np.exp(log_post(r) - peak), 0.01, 5, points=[1])[0]
    assert estimate == pytest.approx(num / den, rel=1e-6)


def test_constant_r_is_recovered_and_projects_at_the_euler_lotka_rate():
    w = ef.generation_interval(6.0, 3.0)
    r_true = 1.4
    series = ef.latent_infections(np.full(120, r_true), w, 1000.0, 99)[:100]
    assert ef.cori_r(series, w) == pytest.approx(r_true, rel=1e-3)
    growth = optimize.brentq(
        lambda g: r_true * np.sum(w[1:] * np.exp(-g * np.arange(1, len(w)))) - 1.0, 0, 1)
    projected = ef.renewal_projection(series, w, r_true, 21)
    assert np.log(projected[-1] / projected[-2]) == pytest.approx(growth, rel=1e-3)


@pytest.fixture(scope="module")
def drawn():
    family = get_family(FAMILY)
    return family, family.draw(np.random.default_rng(0))


def test_draw_is_deterministic_and_counts_have_a_fixed_width(drawn):
    family, draw = drawn
    again = family.draw(np.random.default_rng(0))
    assert again.data == draw.data and again.truth == draw.truth
    assert again.outputs == draw.outputs
    rows = draw.data["cases.csv"].decode().splitlines()
    assert rows[0] == "day,cases"
    # file sizes must not tell the (hidden) epidemic level
    assert {len(r.split(",")[1]) for r in rows[1:]} == {ef.WIDTH}
    query = ef.read_query(draw.data["query.csv"])
    assert list(query) == list(range(len(rows) - 1, len(rows) - 1 + ef.HORIZON))
    assert "r_end" in draw.hidden and "level_at_end" in draw.hidden


def test_references_meet_the_rule_and_no_science_loses(drawn, tmp_path):
    family, draw = drawn
    scores = draw_scores(family, draw)
    assert accept(scores, "lower_is_better")
    assert scores["bound"] == pytest.approx(draw.floor, rel=0.5)
    for name, content in draw.data.items():
        (tmp_path / name).write_bytes(content)
    assert family.baseline_outputs(tmp_path) == draw.outputs["baseline"]
    no_science = family.no_science_outputs(tmp_path)
    assert set(no_science) == {"constant", "training-mean", "persistence"}
    values = score_outputs(family.record_metric(), draw.truth, no_science)
    assert all(v > scores["sota"] for v in values.values())


def test_sota_outputs_are_the_estimator_at_full_precision(drawn):
    _, draw = drawn
    cases = ef.read_cases(draw.data["cases.csv"])
    w = ef.read_weights(draw.data["generation_interval.csv"])
    rows = draw.outputs["sota"][ef.OUTPUT].decode().splitlines()[1:]
    assert [float(r.split(",")[1]) for r in rows] == ef.cori_forecast(cases, w).tolist()


@pytest.mark.slow
def test_one_package_generates_and_verifies_byte_for_byte(tmp_path):
    from discoverygym.naturegym.generate import generate, public_key
    from discoverygym.naturegym.release import verify_release

    out = tmp_path / "release"
    assert generate(FAMILY, 1, out, public_key(2), mode="public", seed=2)["count"] == 1
    verify_release(out, None)
