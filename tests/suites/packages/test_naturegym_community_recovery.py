"""NatureGym family `community-recovery` (relational reasoning, clustering): the oracle's
conditional posterior checked against a brute-force likelihood, Louvain and label
propagation against networkx on a planted example, the references' roles, and one
package generated and verified byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("networkx", reason="the community-recovery family needs the networks "
                                       "extra (networkx)")

from discoverygym.naturegym.families import get_family  # noqa: E402
from discoverygym.naturegym.families.relational_reasoning import (  # noqa: E402
    communities as cm,
)
from discoverygym.naturegym.generate import draw_scores  # noqa: E402
from discoverygym.naturegym.metrics import score_outputs  # noqa: E402
from discoverygym.networks.sbm import (  # noqa: E402
    planted_partition,
    sample_edges,
)

FAMILY = "community-recovery"


def test_oracle_is_the_argmax_of_the_full_poisson_likelihood():
    """Moving one node to each block and evaluating the whole graph's Poisson
    log-likelihood (plus the block-size prior) picks the oracle's block."""
    rng = np.random.default_rng(4)
    model = planted_partition(60, 3, 0.3, 2.8, rng)
    edges = sample_edges(model, 150, rng)
    oracle = cm.conditional_posterior_labels(model, edges)
    u, v = np.triu_indices(model.n, 1)
    adjacency = np.zeros((model.n, model.n))
    adjacency[edges[:, 0], edges[:, 1]] = 1
    observed = adjacency[u, v]
    scale = len(edges) / model.weights(u, v).sum()
    for node in (0, 7, 23, 41):
        best = []
        for k in range(3):
            blocks = model.blocks.copy()
            blocks[node] = k
            moved = cm.BlockModel(blocks, model.theta, model.omega)
            # the volumes of the true blocks, as the posterior conditions on them
            vol = np.bincount(model.blocks, weights=model.theta, minlength=3)
            w = (model.theta[u] * model.theta[v] * model.omega[blocks[u], blocks[v]]
                 / (vol[blocks[u]] * vol[blocks[v]]))
            rate = scale * w
            loglik = float(np.sum(observed * np.log(rate) - rate))
            prior = np.log(np.bincount(model.blocks, minlength=3)[k] / model.n)
            best.append(loglik + prior)
            assert moved.n == model.n
        assert oracle[node] == int(np.argmax(best)), node


def test_louvain_finds_well_separated_blocks_and_the_baseline_is_networkx():
    import networkx as nx

    rng = np.random.default_rng(1)
    model = planted_partition(300, 3, 0.02, 3.0, rng)
    edges = sample_edges(model, 1500, rng)
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(model.blocks, cm.louvain_labels(300, edges)) > 0.9
    graph = nx.Graph()
    graph.add_nodes_from(range(300))
    graph.add_edges_from(map(tuple, edges.tolist()))
    expected = {frozenset(c) for c in nx.community.label_propagation_communities(graph)}
    labels = cm.label_propagation_labels(300, edges)
    got = {frozenset(np.flatnonzero(labels == k).tolist()) for k in set(labels.tolist())}
    assert got == expected


@pytest.fixture(scope="module")
def drawn():
    family = get_family(FAMILY)
    return family, family.draw(np.random.default_rng(1))


def test_draw_is_deterministic_and_the_references_meet_the_rule(drawn, tmp_path):
    family, draw = drawn
    again = family.draw(np.random.default_rng(1))
    assert again.data == draw.data and again.truth == draw.truth
    assert again.outputs == draw.outputs
    assert b"community" not in draw.data["nodes.csv"] + draw.data["edges.csv"]
    scores = draw_scores(family, draw)
    assert scores["baseline"] <= 0.5 * scores["sota"]
    assert scores["bound"] >= 1.2 * scores["sota"]
    for name, content in draw.data.items():
        (tmp_path / name).write_bytes(content)
    assert family.baseline_outputs(tmp_path) == draw.outputs["baseline"]
    values = score_outputs(family.record_metric(), draw.truth,
                           family.no_science_outputs(tmp_path))
    assert set(values) == {"constant", "connected-components"}
    assert values["constant"] == 0.0
    assert all(v < scores["sota"] for v in values.values())


@pytest.mark.slow
def test_one_package_generates_and_verifies_byte_for_byte(tmp_path):
    from discoverygym.naturegym.generate import generate, public_key
    from discoverygym.naturegym.release import verify_release

    out = tmp_path / "release"
    assert generate(FAMILY, 1, out, public_key(4), mode="public", seed=4)["count"] == 1
    verify_release(out, None)
