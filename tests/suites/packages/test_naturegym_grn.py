"""NatureGym family grn-inference (cellular omics): the simulator against its analytic
steady state, GENIE3 finding a planted regulator, the correlation baseline against
SciPy, the references scored through the generated evaluator against scikit-learn, the
missing extra refused in one line, and a generate + verify-release round."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.naturegym.families import ExtraMissing, get_family
from discoverygym.naturegym.families.cellular_omics import grn
from discoverygym.naturegym.metrics import score_outputs

pytest.importorskip("sklearn", reason="grn-inference needs the bio extra (scikit-learn)")


def _chain() -> grn.Network:
    """Hub 0 activates gene 1 (w = 2), gene 1 represses gene 2 (w = -1.5)."""
    weights = np.zeros((grn.N_GENES, grn.N_GENES))
    weights[0, 1], weights[1, 2] = 2.0, -1.5
    return grn.Network(weights, np.full(grn.N_GENES, 1.0), np.array([0]), 0.8)


def test_noise_free_dynamics_reach_the_analytic_steady_state():
    network = _chain()
    basal = np.full((4, grn.N_GENES), grn.BASAL_RATE)
    basal[:, 0] = [0.3, 1.0, 2.0, 4.0]
    x = grn.simulate_expression(np.random.default_rng(0), network, basal, noise=0.0)

    def hill(v):
        return v ** 2 / (1.0 + v ** 2)  # K = 1, n = 2

    x0 = basal[:, 0]
    x1 = grn.BASAL_RATE + 2.0 * hill(x0)
    x2 = grn.BASAL_RATE + 1.5 * (1.0 - hill(x1))
    # after 10 degradation times a k-stage cascade is within ~t^(k-1) e^-t of rest
    assert np.allclose(x[:, 0], x0, rtol=1e-3)
    assert np.allclose(x[:, 1], x1, rtol=2e-3)
    assert np.allclose(x[:, 2], x2, rtol=5e-3)
    assert np.allclose(x[:, 3:], grn.BASAL_RATE, rtol=1e-3)


def test_genie3_ranks_the_planted_regulator_first():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 8))
    x[:, 5] = np.tanh(2.0 * x[:, 2]) + 0.2 * rng.normal(size=300)
    scores = grn.genie3_scores(x, random_state=0, n_trees=50)
    assert np.argmax(scores[:, 5]) == 2
    assert np.all(np.diag(scores) == 0.0)
    # frozen: the same seed gives the same scores
    assert np.array_equal(scores, grn.genie3_scores(x, random_state=0, n_trees=50))


def test_pearson_baseline_is_scipys_absolute_correlation():
    rng = np.random.default_rng(2)
    counts = rng.poisson(5.0, (50, grn.N_GENES))
    counts[:, 7] = 3  # a constant gene correlates with nothing (no NaN)
    scores = grn.pearson_scores(counts)
    assert scores[0, 1] == pytest.approx(abs(pearsonr(counts[:, 0], counts[:, 1])[0]))
    assert np.array_equal(scores, scores.T) and np.all(np.diag(scores) == 0)
    assert np.all(scores[7] == 0) and np.all(np.isfinite(scores))


def test_draw_data_is_draw_without_the_references():
    family = get_family("grn-inference")
    light = family.draw_data(np.random.default_rng(3))
    assert light.outputs == {}
    counts = np.load(__import__("io").BytesIO(light.data["counts.npy"]))
    assert counts.shape == (grn.N_CELLS, grn.N_GENES) and counts.dtype == np.int32
    truth_rows = light.truth["edges.csv"].decode().splitlines()[1:]
    assert len(truth_rows) == grn.N_GENES * (grn.N_GENES - 1)
    assert sum(r.endswith(",1") for r in truth_rows) == light.hidden["edge_count"]


@pytest.mark.slow
def test_references_score_through_the_evaluator_as_scikit_learn_says(tmp_path):
    from sklearn.metrics import average_precision_score

    family = get_family("grn-inference")
    draw = family.draw(np.random.default_rng(4))
    assert draw.data == family.draw_data(np.random.default_rng(4)).data
    scores = score_outputs(family.record_metric(), draw.truth, draw.outputs)

    def column(content: bytes) -> dict[str, float]:
        rows = [r.split(",") for r in content.decode().splitlines()[1:]]
        return {(r[0], r[1]): float(r[2]) for r in rows}

    truth = column(draw.truth["edges.csv"])
    for role, files in draw.outputs.items():
        mine = column(files["edges.csv"])
        expected = average_precision_score([truth[k] for k in truth],
                                           [mine[k] for k in truth])
        assert scores[role] == pytest.approx(expected, abs=1e-12), role
    assert scores["oracle"] == pytest.approx(1.0)
    assert scores["oracle"] >= 1.2 * scores["sota"]
    assert scores["baseline"] < scores["sota"]
    (tmp_path / "d").mkdir()
    for name, content in draw.data.items():
        (tmp_path / "d" / name).write_bytes(content)
    assert family.baseline_outputs(tmp_path / "d") == draw.outputs["baseline"]
    no_science = score_outputs(family.record_metric(), draw.truth,
                               family.no_science_outputs(tmp_path / "d"))
    assert set(no_science) == {"constant", "regulator-variance", "regulator-mean"}
    assert all(value < scores["sota"] for value in no_science.values())


def test_missing_extra_refuses_in_one_line_naming_bio(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sklearn" else real(name, *a))
    family = get_family("grn-inference")
    assert family.missing_modules() == ["sklearn"]
    with pytest.raises(ExtraMissing, match=r"discoverygym\[bio\]"):
        family.require_libraries()


@pytest.mark.slow
def test_generates_one_package_and_verifies_it_byte_for_byte(tmp_path):
    runner = CliRunner()
    out = tmp_path / "release"
    result = runner.invoke(app, ["package", "generate", "grn-inference", "--count", "1",
                                 "--out", str(out), "--seed", "5"])
    assert result.exit_code == 0, result.output
    problem = next(out.glob("ng-*/problem"))
    assert (problem / "data" / "case_dev" / "counts.npy").is_file()
    text = "".join(p.read_text(errors="replace") for p in problem.rglob("*") if p.is_file()
                   and p.suffix in {".md", ".txt", ".json"})
    assert "GENIE3" not in text and "genie3" not in text
    verified = runner.invoke(app, ["package", "verify-release", str(out)])
    assert verified.exit_code == 0, verified.output
    assert Path(out / "release.json").is_file()
