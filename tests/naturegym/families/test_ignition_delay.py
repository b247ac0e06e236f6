"""The ignition-delay family: Cantera's constant-volume ignition checked against an
independent integration, the hidden multipliers, the references, and a generated
package verified byte for byte."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ct = pytest.importorskip("cantera", reason="the ignition-delay family needs the 'chem' extra")

from discoverygym.naturegym.families import get_family  # noqa: E402
from discoverygym.naturegym.families.physical_modeling import ignition as ig  # noqa: E402
from discoverygym.naturegym.metrics import evaluator_source, score_outputs  # noqa: E402


def _independent_delay(temperature: float, pressure_atm: float, phi: float) -> float:
    """The same ignition integrated by scipy's BDF from Cantera's rates alone:
    constant volume and internal energy, dY/dt = w W / rho, dT/dt = -sum(u w) / (rho cv),
    the delay the first time T reaches T0 + 400 K (dense output, root finding)."""
    from scipy.integrate import solve_ivp

    gas = ct.Solution(ig.MECHANISM)
    gas.set_equivalence_ratio(phi, "H2", "O2:1.0, N2:3.76")
    gas.TP = temperature, pressure_atm * ct.one_atm
    rho = gas.density
    weights = gas.molecular_weights

    def rhs(_t, y):
        gas.TDY = y[0], rho, y[1:]
        rates = gas.net_production_rates
        u = gas.partial_molar_int_energies
        return np.concatenate([[-np.dot(u, rates) / (rho * gas.cv_mass)],
                               rates * weights / rho])

    def ignited(_t, y):
        return y[0] - (temperature + ig.IGNITION_RISE_K)

    ignited.terminal = True
    solution = solve_ivp(rhs, (0.0, 1.0), np.concatenate([[temperature], gas.Y]),
                         method="BDF", rtol=1e-9, atol=1e-14, events=ignited)
    return float(solution.t_events[0][0])


@pytest.mark.parametrize("condition", [(1100.0, 1.0, 1.0), (1250.0, 10.0, 0.5)])
def test_delay_matches_an_independent_integration(condition):
    ours = ig.ignition_delays(np.array([condition]))[0]
    assert ours == pytest.approx(_independent_delay(*condition), rel=2e-3)


def test_delay_follows_known_hydrogen_behaviour():
    # Faster when hotter at 1 atm; slower at 20 atm than 1 atm near 1000 K (the third-body
    # step H + O2 + M wins over branching: the extended second explosion limit).
    hot, cool = ig.ignition_delays(np.array([[1300.0, 1.0, 1.0], [1050.0, 1.0, 1.0]]))
    assert hot < cool
    low_p, high_p = ig.ignition_delays(np.array([[1000.0, 1.0, 1.0], [1000.0, 20.0, 1.0]]))
    assert high_p > 3 * low_p
    # Order of magnitude of the shock-tube literature at 1100 K, 1 atm, phi = 1: ~0.1 ms.
    assert 2e-5 < ig.ignition_delays(np.array([[1100.0, 1.0, 1.0]]))[0] < 5e-4


def test_multipliers_act_on_the_named_steps_in_the_expected_direction():
    gas = ct.Solution(ig.MECHANISM)
    equations = [r.equation for r in gas.reactions()]
    for step in ig.PERTURBED_STEPS.values():
        assert all(eq in equations for eq in step)
    condition = np.array([[1100.0, 5.0, 1.0]])
    base = ig.ignition_delays(condition)[0]
    assert ig.ignition_delays(condition, {"chain_branching": 0.3})[0] < base
    assert ig.ignition_delays(condition, {"third_body_recombination": 0.3})[0] > base
    perturbed = ig._solution({"third_body_recombination": 0.3})
    for k, eq in enumerate(equations):
        expected = np.exp(0.3) if eq in ig.PERTURBED_STEPS["third_body_recombination"] else 1
        assert perturbed.multiplier(k) == pytest.approx(expected)


def _evaluate(files: dict[str, bytes], truth: bytes, tmp_path: Path, family) -> dict:
    """The generated evaluator run as a package runs it (a subprocess on the files)."""
    root = tmp_path / "evaluation"
    (root / "ground_truth" / "case").mkdir(parents=True, exist_ok=True)
    (root / "ground_truth" / "case" / "prediction.csv").write_bytes(truth)
    (root / "evaluator.py").write_text(evaluator_source(family.record_metric()))
    out = tmp_path / "out" / "case"
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    done = subprocess.run([sys.executable, str(root / "evaluator.py")], capture_output=True,
                          text=True, env={**os.environ, "OUTPUT_DIR": str(tmp_path / "out")},
                          check=True, timeout=60)
    return json.loads(done.stdout)["case"]


def _truth_values(draw) -> np.ndarray:
    return np.loadtxt(io.BytesIO(draw.truth["prediction.csv"]), delimiter=",",
                      skiprows=1)[:, 3]


def _answer_values(files: dict[str, bytes]) -> np.ndarray:
    return np.loadtxt(io.BytesIO(files["prediction.csv"]), delimiter=",", skiprows=1)[:, 3]


def test_a_draw_is_deterministic_and_its_references_score_through_the_evaluator(tmp_path):
    family = get_family("ignition-delay")
    a = family.draw(np.random.default_rng(5))
    b = family.draw(np.random.default_rng(5))
    assert a.data == b.data and a.truth == b.truth and a.hidden == b.hidden
    assert a.outputs == b.outputs
    assert set(a.hidden) == {f"log_multiplier_{k}" for k in ig.PERTURBED_STEPS}
    for step, value in a.hidden.items():
        low, high = ig.LOG_MULTIPLIER_RANGE[step.removeprefix("log_multiplier_")]
        assert low <= abs(value) <= high
    truth = _truth_values(a)
    scores = score_outputs(family.record_metric(), a.truth, a.outputs)
    for role, files in a.outputs.items():
        rms = float(np.sqrt(np.mean((_answer_values(files) - truth) ** 2)))
        assert scores[role] == pytest.approx(rms, rel=1e-9)
        # the shipped evaluator (a subprocess) gives the same figure as the gates' scorer
        assert _evaluate(files, a.truth["prediction.csv"], tmp_path / role,
                         family)[family.metric.name] == scores[role]
    # the SOTA's answer is the unperturbed mechanism at full precision
    query = np.loadtxt(io.BytesIO(a.data["query.csv"]), delimiter=",", skiprows=1)
    assert list(_answer_values(a.outputs["sota"])) == list(np.log10(ig.ignition_delays(query)))
    # the oracle's error is the scatter: near the declared level
    assert 0.3 * a.floor < scores["oracle"] < 2.5 * a.floor


def test_baseline_and_no_science_answers_are_well_formed(tmp_path):
    family = get_family("ignition-delay")
    draw = family.draw(np.random.default_rng(11))
    data = tmp_path / "data"
    data.mkdir()
    for name, content in draw.data.items():
        (data / name).write_bytes(content)
    assert family.baseline_outputs(data) == draw.outputs["baseline"]
    answers = family.no_science_outputs(data)
    assert set(answers) == {"constant", "training-mean", "nearest-neighbour"}
    scores = score_outputs(family.record_metric(), draw.truth,
                           {**answers, "oracle": draw.outputs["oracle"]})
    for name in answers:
        assert isinstance(scores[name], float), scores[name]
        assert scores[name] > scores["oracle"]


def test_nearest_neighbour_copies_the_closest_measured_condition():
    measured = np.array([[1000.0, 1.0, 1.0], [1400.0, 20.0, 2.0]])
    query = np.array([[1010.0, 1.1, 1.0], [1390.0, 18.0, 1.9]])
    assert list(ig.nearest_neighbour(measured, np.array([-3.0, -5.0]), query)) == [-3, -5]


def test_measured_file_rounds_as_declared_and_the_scatter_is_its_own_draw():
    family = get_family("ignition-delay")
    draw = family.draw(np.random.default_rng(2))
    table = np.loadtxt(io.BytesIO(draw.data["measured.csv"]), delimiter=",", skiprows=1)
    assert ig.N_MEASURED[0] <= len(table) <= ig.N_MEASURED[1]
    info = json.loads(draw.data["info.json"])
    assert ig.SCATTER_LOG10[0] <= info["scatter_log10"] <= ig.SCATTER_LOG10[1]
    assert info["scatter_log10"] == draw.floor


def test_missing_extra_refuses_in_one_line(monkeypatch):
    from discoverygym.naturegym.families import ExtraMissing

    family = get_family("ignition-delay")
    assert family.extra == "chem" and not family.missing_modules()
    monkeypatch.setitem(sys.modules, "cantera", None)
    with pytest.raises(ImportError, match="'chem' extra"):
        ig.ignition_delays(np.array([[1100.0, 1.0, 1.0]]))
    monkeypatch.setattr(type(family), "libraries", ("numpy", "cantera-not-installed"))
    with pytest.raises(ExtraMissing, match=r"discoverygym\[chem\]"):
        family.require_libraries()


@pytest.mark.slow
def test_generate_one_package_and_verify_it_byte_for_byte(tmp_path):
    from discoverygym.core.keys import new_key
    from discoverygym.naturegym import generate as gen
    from discoverygym.naturegym.release import ReleaseMismatch, verify_release

    key = new_key()
    gen.generate("ignition-delay", 1, tmp_path / "out", key)
    assert verify_release(tmp_path / "out", key)["count"] == 1
    with pytest.raises(ReleaseMismatch):
        verify_release(tmp_path / "out", new_key())
    problem = next(p for p in (tmp_path / "out").iterdir() if p.is_dir()) / "problem"
    text = " ".join(p.read_text() for p in problem.rglob("*") if p.is_file())
    assert "h2o2" not in text and "GRI" not in text and "multiplier" not in text


def test_draw_data_is_the_draws_data_without_the_references():
    family = get_family("ignition-delay")
    full, light = (f(np.random.default_rng(8)) for f in (family.draw, family.draw_data))
    assert (light.data, light.hidden, light.floor) == (full.data, full.hidden, full.floor)
    assert light.outputs == {} and full.outputs
