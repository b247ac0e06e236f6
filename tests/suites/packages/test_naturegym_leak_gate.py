"""The statistical leak gate (issue #34): shown catching each leak of the gravity
families as they were drawn before the issue (the old draw, kept below as a fixture),
and passing the fixed families.

The old draw is played exactly as it produced the agent's files: noise = 0.002 x the
semi-major axis, an observation grid 2.5 periods long, every orbit starting at
periapsis at t = 0 (so the time of periapsis, a hidden value the old draw did not even
declare, is 0 in every draw), mu = 4 pi^2 a^3 / P^2."""

from __future__ import annotations

import numpy as np
import pytest

from discoverygym.naturegym.families import get_family
from discoverygym.naturegym.generate import public_key
from discoverygym.naturegym.leak_gate import (
    MIN_DRAWS,
    LeakGateUnavailable,
    leak_report,
    run_leak_gate,
    visible_features,
)
from discoverygym.physics.orbit_fit import relative_orbit

SAMPLES = 80  # enough for every leak to show; the full gate draws MIN_DRAWS


def _old_gravity_drag_draw(rng: np.random.Generator) -> tuple[dict[str, bytes], dict]:
    """The data and hidden values of gravity-drag version 2 (before issue #34)."""
    from discoverygym.naturegym.families.base import csv_bytes

    a_au, e = rng.uniform(0.5, 2.0), rng.uniform(0.1, 0.5)
    period_days = rng.uniform(50.0, 400.0)
    drag = float(1.0 / (rng.uniform(40.0, 150.0) * period_days))
    mu = 4.0 * np.pi**2 * a_au**3 / period_days**2
    r_peri = a_au * (1.0 - e)
    v_peri = np.sqrt(mu / r_peri * (1.0 + e))
    angle, sense = rng.uniform(0.0, 2.0 * np.pi), rng.choice([-1.0, 1.0])
    state0 = np.array([r_peri * np.cos(angle), r_peri * np.sin(angle),
                       -sense * v_peri * np.sin(angle), sense * v_peri * np.cos(angle)])
    t_obs = np.linspace(0.0, 2.5 * period_days, 120)
    t_query = np.linspace(2.6 * period_days, 5.0 * period_days, 40)
    t_all = np.round(np.concatenate([t_obs, t_query]), 6)
    sigma = 2e-3 * a_au
    noisy = relative_orbit(t_all, state0, mu, 0.0, drag) + rng.normal(0.0, sigma, (160, 2))
    data = {"observations.csv": csv_bytes(["time_days", "x_au", "y_au"],
                                          [t_all[:120], noisy[:120, 0], noisy[:120, 1]]),
            "query.csv": csv_bytes(["time_days"], [t_all[120:]]),
            "info.json": f'{{"position_noise_au": {sigma:.6e}}}\n'.encode()}
    hidden = {"semi_major_axis_au": a_au, "eccentricity": e, "period_days": period_days,
              "mu_au3_per_day2": mu, "drag_rate_per_day": drag, "start_angle_rad": angle,
              "orbit_sense": sense, "periapsis_time_days": 0.0}
    return data, hidden


@pytest.fixture(scope="module")
def old_report():
    rng = np.random.default_rng(2026)
    return leak_report([_old_gravity_drag_draw(rng) for _ in range(SAMPLES)])


def test_the_gate_catches_each_leak_of_the_old_gravity_draw(old_report):
    verdicts = {v.hidden: v for v in old_report.verdicts}
    assert not old_report.passed
    # a = noise / 0.002
    a = verdicts["semi_major_axis_au"]
    assert a.leak and a.feature == "info.json.position_noise_au" and a.single_r2 > 0.999
    # P = last observation time / 2.5 (any of the grid's numbers gives it)
    p = verdicts["period_days"]
    assert p.leak and p.single_r2 > 0.999
    assert p.feature.startswith(("observations.csv time_days", "query.csv time_days"))
    # every orbit starts at periapsis at t = 0
    assert verdicts["periapsis_time_days"].leak
    assert verdicts["periapsis_time_days"].kind == "constant"
    # mu = 4 pi^2 a^3 / P^2 follows from the two
    mu = verdicts["mu_au3_per_day2"]
    assert mu.leak and max(mu.single_r2, mu.model_score) > 0.9
    assert "position_noise_au" in mu.feature or "time_days" in mu.feature
    # the values the scaffolding does not give are not flagged (the start angle may be:
    # with every orbit starting at periapsis, the count of minus signs in the file, so
    # its size, follows the orbit's orientation)
    for name in ("eccentricity", "orbit_sense"):
        assert not verdicts[name].leak, verdicts[name]
    text = "\n".join(old_report.findings)
    assert "semi_major_axis_au is derivable: R^2 = 1.000 from info.json.position_noise_au" \
        in text


@pytest.mark.parametrize("name", ["gravity-drag", "gravity-force-law"])
def test_the_fixed_gravity_families_show_no_leak(name):
    family = get_family(name)
    key = public_key(0)
    samples = []
    for k in range(SAMPLES):
        draw = family.draw_data(np.random.default_rng(key.derive("t", name, k)))
        samples.append((draw.data, draw.hidden))
    report = leak_report(samples)
    assert not any(v.leak for v in report.verdicts), report.findings
    assert report.worst < 0.5
    assert not report.passed  # fewer than MIN_DRAWS draws never pass
    assert f"only {SAMPLES} draws" in report.findings[0]


def test_draw_data_is_the_data_and_hidden_of_draw():
    family = get_family("gravity-drag")
    full = family.draw(np.random.default_rng(3))
    light = family.draw_data(np.random.default_rng(3))
    assert full.data == light.data and full.hidden == light.hidden


def test_a_planted_derivation_through_a_product_is_named():
    """A hidden value hidden as a product of two visible numbers."""
    rng = np.random.default_rng(1)
    samples = []
    for _ in range(60):
        a, b, secret = rng.uniform(1, 2), rng.uniform(1, 2), rng.uniform(0, 1)
        samples.append(({"info.json": f'{{"a": {a}, "b": {b}}}'.encode()},
                        {"product": a * b, "free": secret}))
    verdicts = {v.hidden: v for v in leak_report(samples).verdicts}
    assert verdicts["product"].leak
    assert verdicts["product"].feature == "info.json.a * info.json.b"
    assert not verdicts["free"].leak


def test_a_class_leak_is_caught():
    rng = np.random.default_rng(2)
    samples = []
    for _ in range(100):
        sense = float(rng.choice([-1.0, 1.0]))
        rows = 50 if sense > 0 else 51  # the file's size tells the class
        samples.append(({"d.csv": b"t\n" + b"1\n" * rows}, {"sense": sense,
                                                          "coin": float(rng.choice([0, 1]))}))
    verdicts = {v.hidden: v for v in leak_report(samples).verdicts}
    assert verdicts["sense"].leak and verdicts["sense"].kind == "class"
    assert not verdicts["coin"].leak


def test_a_table_with_a_text_column_keeps_its_rows_and_grids():
    """A CSV with a subject's id beside its numbers (pk-population's tables) still shows
    its row count and its time grid: here the grid's last time is a hidden value, and
    the file's size, its width fixed, does not tell it."""
    rng = np.random.default_rng(3)
    samples = []
    for _ in range(60):
        span, secret = rng.uniform(1.0, 9.0), rng.uniform(0.0, 1.0)
        rows = "".join(f"S{k:03d},{t:.3f}\n" for k, t in enumerate(np.linspace(0, span, 12)))
        samples.append(({"samples.csv": ("subject,time_h\n" + rows).encode()},
                        {"span_h": span, "free": secret}))
    assert len({len(data["samples.csv"]) for data, _ in samples}) == 1
    features = visible_features(samples[0][0])
    assert features["samples.csv rows"] == 12.0
    assert features["samples.csv time_h first"] == 0.0
    assert "samples.csv subject first" not in features
    verdicts = {v.hidden: v for v in leak_report(samples).verdicts}
    assert verdicts["span_h"].leak and verdicts["span_h"].single_r2 > 0.999
    assert verdicts["span_h"].feature.startswith("samples.csv time_h")
    assert not verdicts["free"].leak


def test_features_are_scaffolding_only_and_survive_hostile_files():
    features = visible_features({
        "observations.csv": b"time_days,x\n0,0.3\n1,-0.2\n2,0.5\n",
        "info.json": b'{"noise": 0.1, "grid": [1, 2], "flag": true, "name": "x"}',
        "bad.json": b"[" * 100_000, "bad.npy": b"\x93NUMPY garbage",
        "notes.txt": b"sigma = 0.25 and 1e400",
    })
    assert features["observations.csv time_days last"] == 2.0
    assert features["observations.csv time_days step"] == 1.0
    assert not any(" x " in k for k in features)  # the measurements are the science
    assert features["info.json.noise"] == 0.1 and features["info.json.grid[1]"] == 2.0
    assert "info.json.flag" not in features
    assert features["notes.txt number 0"] == 0.25
    assert all(np.isfinite(v) for v in features.values())  # 1e400 dropped


def test_the_gate_refuses_in_one_line_without_scikit_learn(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sklearn(name, *args, **kwargs):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    with pytest.raises(LeakGateUnavailable, match=r"discoverygym\[naturegym\]"):
        run_leak_gate(get_family("gravity-drag"), public_key(0), MIN_DRAWS)
