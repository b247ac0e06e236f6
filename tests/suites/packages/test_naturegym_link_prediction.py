"""NatureGym family `link-prediction` (relational reasoning, ranking): the block-model
simulator, the baseline and the SOTA checked against hand computations, the references'
roles, and one package generated and verified byte for byte."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("networkx", reason="the link-prediction family needs the networks "
                                       "extra (networkx)")

from discoverygym.naturegym.families import get_family  # noqa: E402
from discoverygym.naturegym.families.relational_reasoning import (  # noqa: E402
    link_prediction as lp,
)
from discoverygym.naturegym.generate import draw_scores  # noqa: E402
from discoverygym.networks.sbm import (  # noqa: E402
    planted_partition,
    sample_edges,
)

FAMILY = "link-prediction"


def _write(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_bytes(content)


def test_block_model_draws_exactly_m_distinct_edges_with_the_planted_mixing():
    rng = np.random.default_rng(0)
    model = planted_partition(400, 4, 0.2, 3.0, rng)
    edges = sample_edges(model, 3000, rng)
    assert edges.shape == (3000, 2)
    assert np.all(edges[:, 0] < edges[:, 1])
    assert len({tuple(e) for e in edges.tolist()}) == 3000
    between = np.mean(model.blocks[edges[:, 0]] != model.blocks[edges[:, 1]])
    # omega's off-diagonal mass is the between-block share of edge weight; sampling
    # without replacement keeps it within a few percent at this density
    assert between == pytest.approx(0.2, abs=0.04)


def test_block_model_weights_follow_the_degree_correction():
    model = planted_partition(50, 3, 0.1, 2.5, np.random.default_rng(1))
    u, v = np.array([0, 1, 2]), np.array([5, 5, 5])
    w = model.weights(u, v)
    vol = np.bincount(model.blocks, weights=model.theta, minlength=3)
    for k in range(3):
        a, b = u[k], v[k]
        expected = (model.theta[a] * model.theta[b] * model.omega[model.blocks[a],
                    model.blocks[b]] / (vol[model.blocks[a]] * vol[model.blocks[b]]))
        assert w[k] == pytest.approx(expected)
    assert model.weights(np.array([3]), np.array([3]))[0] == 0.0


def test_scores_match_the_definitions_computed_by_hand():
    edges = np.array([[0, 1], [0, 2], [1, 2], [2, 3], [1, 3], [3, 4]])
    candidates = np.array([[0, 3], [1, 4], [0, 4]])
    degree = Counter(edges.ravel().tolist())
    neighbours = {i: set() for i in range(5)}
    for a, b in edges.tolist():
        neighbours[a].add(b)
        neighbours[b].add(a)
    by_hand = [sum(1 / math.log(degree[z]) for z in neighbours[a] & neighbours[b])
               for a, b in candidates.tolist()]
    assert lp.adamic_adar_scores(5, edges, candidates) == pytest.approx(by_hand)
    assert list(lp.preferential_attachment_scores(5, edges, candidates)) == [
        degree[a] * degree[b] for a, b in candidates.tolist()]


@pytest.fixture(scope="module")
def drawn():
    family = get_family(FAMILY)
    return family, family.draw(np.random.default_rng(7))


def test_draw_is_deterministic_and_hides_the_labels(drawn):
    family, draw = drawn
    again = family.draw(np.random.default_rng(7))
    assert again.data == draw.data and again.truth == draw.truth
    assert again.outputs == draw.outputs
    edges = {tuple(r) for r in lp.read_pairs_bytes(draw.data["edges.csv"]).tolist()}
    truth = draw.truth["scores.csv"].decode().splitlines()
    assert truth[0] == "node_u,node_v,link_score"
    rows = [line.split(",") for line in truth[1:]]
    positives = {(int(a), int(b)) for a, b, y in rows if y == "1"}
    negatives = {(int(a), int(b)) for a, b, y in rows if y == "0"}
    assert len(positives) + len(negatives) == len(rows)
    assert len(negatives) == lp.NEGATIVES_PER_POSITIVE * len(positives)
    assert not positives & edges and not negatives & edges  # held out / non-edges
    assert b"link_score" not in draw.data["candidates.csv"]
    candidates = [tuple(r) for r in lp.read_pairs_bytes(draw.data["candidates.csv"]).tolist()]
    assert candidates == sorted(candidates)  # the order tells nothing
    assert set(draw.hidden) == {"blocks", "mixing", "degree_exponent"}


def test_references_meet_the_redraw_rule_and_the_agent_side_baseline_agrees(drawn,
                                                                             tmp_path):
    family, draw = drawn
    scores = draw_scores(family, draw)
    assert scores["baseline"] < 0.5 * scores["sota"]
    assert scores["bound"] > 1.2 * scores["sota"]
    _write(tmp_path, draw.data)
    assert family.baseline_outputs(tmp_path) == draw.outputs["baseline"]
    no_science = family.no_science_outputs(tmp_path)
    assert set(no_science) == {"constant", "degree-ranking"}
    from discoverygym.naturegym.metrics import score_outputs

    values = score_outputs(family.record_metric(), draw.truth, no_science)
    assert all(isinstance(v, float) and v < scores["sota"] for v in values.values())
    # constant scores are one tie: AP is the share of positives
    assert values["constant"] == pytest.approx(1 / (lp.NEGATIVES_PER_POSITIVE + 1), abs=0.01)


def test_sota_outputs_are_written_at_full_precision(drawn):
    family, draw = drawn
    rows = draw.outputs["sota"]["scores.csv"].decode().splitlines()[1:]
    n, edges = lp.read_nodes_bytes(draw.data["nodes.csv"]), lp.read_pairs_bytes(
        draw.data["edges.csv"])
    candidates = lp.read_pairs_bytes(draw.data["candidates.csv"])
    exact = lp.adamic_adar_scores(n, edges, candidates)
    assert [float(r.split(",")[2]) for r in rows] == exact.tolist()


@pytest.mark.slow
def test_one_package_generates_and_verifies_byte_for_byte(tmp_path):
    from discoverygym.naturegym.generate import generate, public_key
    from discoverygym.naturegym.release import verify_release

    out = tmp_path / "release"
    manifest = generate(FAMILY, 1, out, public_key(5), mode="public", seed=5)
    assert manifest["count"] == 1
    verify_release(out, None)
