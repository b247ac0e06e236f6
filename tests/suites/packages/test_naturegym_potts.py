"""NatureGym family potts-fitness (protein biology): the Gibbs sampler against exact
enumeration, the energy against an explicit sum, the independent-site model against
hand-counted frequencies and a fields-only landscape, the references scored through the
generated evaluator against SciPy, and a generate + verify-release round."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.naturegym.families import get_family
from discoverygym.naturegym.families.protein_biology import potts_fitness as pf
from discoverygym.naturegym.metrics import score_outputs


def _tiny_model() -> pf.Potts:
    rng = np.random.default_rng(5)
    return pf.Potts(rng.normal(0, 1, (3, 3)),
                    {(0, 1): rng.normal(0, 1.5, (3, 3)), (1, 2): rng.normal(0, 1.5, (3, 3))})


def test_energy_is_the_sum_of_fields_and_couplings():
    model = _tiny_model()
    s = np.array([2, 0, 1])
    by_hand = (model.fields[0, 2] + model.fields[1, 0] + model.fields[2, 1]
               + model.couplings[(0, 1)][2, 0] + model.couplings[(1, 2)][0, 1])
    assert model.energy(s[None])[0] == pytest.approx(by_hand)


def test_gibbs_sampler_matches_the_exact_boltzmann_distribution():
    model = _tiny_model()
    states = np.array(list(itertools.product(range(3), repeat=3)))
    weights = np.exp(model.energy(states))
    exact = weights / weights.sum()
    sample = pf.gibbs_sample(np.random.default_rng(0), model, 20_000, sweeps=30)
    index = sample @ np.array([9, 3, 1])
    empirical = np.bincount(index, minlength=27) / len(sample)
    # the binomial standard error is at most 0.0035 per state
    assert np.max(np.abs(empirical - exact)) < 0.015


def test_independent_site_model_is_the_reweighted_pseudocounted_frequency():
    alignment = np.array([[0, 1], [0, 2], [1, 2], [2, 0]])  # all below 80 % identity
    assert pf.sequence_weights(alignment).tolist() == [1.0, 1.0, 1.0, 1.0]
    log_f = pf.independent_site_model(alignment, n_states=3)
    pseudo = pf.PSEUDOCOUNT * 4 / 3
    expected_site0 = (np.array([2, 1, 1]) + pseudo) / (4 * (1 + pf.PSEUDOCOUNT))
    assert np.allclose(np.exp(log_f[0]), expected_site0)
    # identical sequences share one unit of weight
    assert pf.sequence_weights(np.array([[0, 1], [0, 1], [2, 2]])).tolist() == [0.5, 0.5, 1.0]


def test_independent_site_model_recovers_a_fields_only_landscape():
    """Without couplings the site-independent model is the true model, so its scores
    of double mutants rank like the true energy differences."""
    rng = np.random.default_rng(1)
    model = pf.Potts(rng.normal(0, 1, (pf.N_SITES, pf.N_STATES)), {})
    alignment = pf.gibbs_sample(rng, model, 3000, sweeps=2)
    wildtype = alignment[np.argmax(model.energy(alignment))]
    variants = pf.double_mutants(rng, wildtype, 200)
    scores = pf.independent_site_scores(alignment, wildtype, variants)
    truth = model.energy(variants) - model.energy(wildtype)
    assert spearmanr(scores, truth)[0] > 0.9


def test_pseudo_likelihood_gradient_matches_finite_differences():
    """The analytic gradient of the state of the art's objective against central
    differences of its value, on a random alignment and random parameters (the
    couplings' symmetrisation and masked diagonal blocks included)."""
    rng = np.random.default_rng(7)
    alignment = rng.integers(0, 3, (15, 4))
    objective = pf.pseudo_likelihood_objective(alignment, n_states=3,
                                               weights=rng.uniform(0.2, 1.0, 15))
    size = 4 * 3
    theta = rng.normal(0, 0.7, size + size * size)
    value, gradient = objective.value_and_gradient(theta)
    step = 1e-6
    for k in rng.choice(len(theta), 40, replace=False).tolist() + [0, size + 1]:
        up, down = theta.copy(), theta.copy()
        up[k] += step
        down[k] -= step
        numeric = (objective.value_and_gradient(up)[0]
                   - objective.value_and_gradient(down)[0]) / (2 * step)
        assert gradient[k] == pytest.approx(numeric, rel=1e-5, abs=1e-6), k
    # the value by hand for one sequence: -log p(s_i | rest) summed over sites
    h, coupling = objective.unpack(theta)
    by_hand = 0.0
    for n, s in enumerate(alignment):
        for i in range(4):
            logits = np.array([h[i * 3 + a] + sum(coupling[i * 3 + a, j * 3 + s[j]]
                                                  for j in range(4) if j != i)
                               for a in range(3)])
            by_hand -= objective.weights[n] * (logits[s[i]] - np.log(np.exp(logits).sum()))
    by_hand += objective.lambda_h * h @ h + objective.lambda_j * sum(
        (coupling[i * 3:i * 3 + 3, j * 3:j * 3 + 3] ** 2).sum()
        for i in range(4) for j in range(i + 1, 4))
    assert value == pytest.approx(by_hand, rel=1e-10)


def test_pseudo_likelihood_recovers_a_planted_potts_model():
    """Pseudo-likelihood is consistent: fitted to 20 000 exact samples of a small planted
    model (unit weights), its energies match the true ones up to a constant (gauge-free,
    by exact enumeration of the 81 states), and its couplings, in the zero-sum gauge,
    are the planted ones on the three coupled pairs and near zero on the others."""
    rng = np.random.default_rng(11)
    model = pf.Potts(rng.normal(0, 0.5, (4, 3)),
                     {(0, 1): rng.normal(0, 1.2, (3, 3)), (1, 3): rng.normal(0, 1.2, (3, 3)),
                      (2, 3): rng.normal(0, 1.2, (3, 3))})
    sample = pf.gibbs_sample(rng, model, 20_000, sweeps=30)
    fitted = pf.fit_pseudo_likelihood(sample, n_states=3, weights=np.ones(len(sample)))
    states = np.array(list(itertools.product(range(3), repeat=4)))
    true, mine = model.energy(states), fitted.energy(states)
    p = np.exp(true) / np.exp(true).sum()
    error = (mine - np.average(mine, weights=p)) - (true - np.average(true, weights=p))
    assert np.sqrt(np.average(error ** 2, weights=p)) < 0.08
    assert np.max(np.abs(error[p > 1 / 81])) < 0.1  # rare states are sampled less

    def zero_sum(c: np.ndarray) -> np.ndarray:
        return c - c.mean(0) - c.mean(1)[:, None] + c.mean()

    for pair in itertools.combinations(range(4), 2):
        planted = model.couplings.get(pair, np.zeros((3, 3)))
        assert np.max(np.abs(zero_sum(fitted.couplings[pair]) - zero_sum(planted))) < 0.15
    assert max(np.abs(zero_sum(c)).max() for c in model.couplings.values()) > 0.6


def test_variant_names_round_trip_through_the_data_files(tmp_path):
    draw = get_family("potts-fitness").draw(np.random.default_rng(2))
    for name, content in draw.data.items():
        (tmp_path / name).write_bytes(content)
    alignment, wildtype, names, variants = pf.read_instance(tmp_path)
    assert alignment.shape == (pf.ALIGNMENT_DEPTH, pf.N_SITES)
    assert len(set(names)) == pf.N_VARIANTS
    assert all((v != wildtype).sum() == 2 for v in variants)
    assert [pf.variant_name(wildtype, v) for v in variants] == names


def test_the_nearest_neighbour_predictor_ranks_the_variants(tmp_path):
    """The no-science gate's nearest neighbour is a real predictor, not a constant in
    disguise: every double mutant lies at distance 2 from the wild type (which is in
    the alignment), so the wild type is left out of the neighbours. By hand: a variant
    that two other members hold exactly comes first, one at distance 1 from a member
    next, one at distance 2 from every member last."""
    wildtype = np.zeros(4, int)
    alignment = np.array([[0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 2]])
    variants = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 3, 3]])
    scores = pf.nearest_neighbour_scores(alignment, variants, wildtype)
    assert scores[0] > scores[1] > scores[2]
    assert np.floor(scores).tolist() == [0.0, -1.0, -2.0]  # ties only break ties
    # the k-nearest form, by hand (members 2-4; distances 0, 0, 4 / 4, 4, 1 / 4, 4, 2)
    assert pf.nearest_members_scores(alignment, variants, wildtype, 2).tolist() == [
        0.0, -2.5, -3.0]
    family = get_family("potts-fitness")
    draw = family.draw(np.random.default_rng(3))
    for name, content in draw.data.items():
        (tmp_path / name).write_bytes(content)
    answer = family.no_science_outputs(tmp_path)["nearest-neighbour"]["fitness.csv"]
    values = {row.split(",")[1] for row in answer.decode().splitlines()[1:]}
    assert len(values) > 10, values


def test_references_score_through_the_evaluator_as_scipy_says(tmp_path):
    family = get_family("potts-fitness")
    draw = family.draw(np.random.default_rng(3))
    scores = score_outputs(family.record_metric(), draw.truth, draw.outputs)

    def column(content: bytes) -> dict[str, float]:
        rows = content.decode().splitlines()[1:]
        return {r.split(",")[0]: float(r.split(",")[1]) for r in rows}

    truth = column(draw.truth["fitness.csv"])
    for role, files in draw.outputs.items():
        mine = column(files["fitness.csv"])
        expected = spearmanr([truth[k] for k in truth], [mine[k] for k in truth])[0]
        assert scores[role] == pytest.approx(expected, abs=1e-12), role
    # the noise-free truth leaves the fitted Potts model headroom, and the fitted
    # Potts model beats the independent-site model (version 1's state of the art)
    assert scores["oracle"] > 1.2 * scores["sota"] > 0
    for name, files in draw.outputs.items():
        assert set(files) == {"fitness.csv"}, name
    for content in draw.data.values():
        assert b"independent" not in content
    (tmp_path / "d").mkdir()
    for name, content in draw.data.items():
        (tmp_path / "d" / name).write_bytes(content)
    alignment, wildtype, names, variants = pf.read_instance(tmp_path / "d")
    independent = pf.independent_site_scores(alignment, wildtype, variants)
    assert scores["sota"] > spearmanr(independent, [truth[k] for k in names])[0]
    assert family.baseline_outputs(tmp_path / "d") == {
        "fitness.csv": draw.outputs["baseline"]["fitness.csv"]}
    no_science = score_outputs(family.record_metric(), draw.truth,
                               family.no_science_outputs(tmp_path / "d"))
    assert set(no_science) == {"constant", "nearest-neighbour", "nearest-20-members",
                               "mutation-count"}
    assert all(value < scores["sota"] for value in no_science.values())


@pytest.mark.slow
def test_generates_one_package_and_verifies_it_byte_for_byte(tmp_path):
    runner = CliRunner()
    out = tmp_path / "release"
    result = runner.invoke(app, ["package", "generate", "potts-fitness", "--count", "1",
                                 "--out", str(out), "--seed", "4"])
    assert result.exit_code == 0, result.output
    problem = next(out.glob("ng-*/problem"))
    assert (problem / "data" / "case_dev" / "alignment.fasta").is_file()
    text = "".join(p.read_text(errors="replace") for p in problem.rglob("*") if p.is_file()
                   and p.suffix in {".md", ".txt", ".json"})
    assert "independent_site" not in text and "Hopf" not in text
    verified = runner.invoke(app, ["package", "verify-release", str(out)])
    assert verified.exit_code == 0, verified.output
    assert Path(out / "release.json").is_file()
