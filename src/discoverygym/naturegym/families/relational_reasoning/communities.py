"""Community recovery in a sparse network with hidden blocks.

A network is drawn from a degree-corrected stochastic block model (`networks/sbm.py`,
in the shared layer: both relational families draw from it) whose block
count (3 to 8), mixing (20 to 40 % of edge ends between blocks) and degree spread are
hidden; it is sparse (mean degree 3 to 6). The agent sees every edge and assigns each
node to a community; the metric is the adjusted Rand index against the true blocks.

- baseline: label propagation (Raghavan, Albert & Kumara 2007; networkx's
  semi-synchronous variant, Cordasco & Gargano 2010), which floods a sparse network
  with a few labels;
- state of the art: Louvain modularity maximisation (Blondel et al. 2008),
  networkx.community.louvain_communities with a fixed seed;
- oracle: each node's most probable block under the true model given the true blocks
  of all the others (the exact conditional posterior with the true parameters).

Why there is room above the SOTA: modularity has no notion of degree correction or of
the number of blocks, and in a sparse, well-mixed network it splits and merges blocks;
a fitted degree-corrected block model (or belief propagation) recovers much more, as
the oracle shows."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ....networks.sbm import BlockModel, planted_partition, sample_edges
from ..base import Draw, Family, Metric, Reference
from .link_prediction import pairs_csv, read_nodes, read_pairs

LOUVAIN_SEED = 20080101
SOTA_VERSION = "louvain/networkx-3"
OUTPUT = "communities.csv"

_README = """# Recover the communities of a network

## Scientific problem

A network of nodes joined by undirected edges was formed by a process in which every
node belongs to one of a few groups, and the chance of an edge depends on the groups of
its ends and on how well connected each end is. The groups are not given.

## Task objective

For each network, assign every node to a community so that the communities match the
groups that formed the network.

## Dataset information

`data/<network>/edges.csv`: the edges; `data/<network>/nodes.csv`: every node. See
`data_description.md`.

## Evaluation metrics

Adjusted Rand index of your communities against the true groups (higher is better;
community names do not matter, only which nodes share one), compared with a reference
value per network.

## Output format

For each network write `<OUTPUT_DIR>/<network>/communities.csv` with the header
`node,community` and one row per node (any order), `community` a name of 1 to 200
characters.

## Submission guidelines

A missing or unreadable file, a wrong header, or a missing, repeated or extra node
counts as a failure for that network. You may ask for an evaluation of your current
outputs.
"""

_DATA = """# Data

Each folder under `data/` is one network; `{dev}` is the development network
(`evaluate` scores only it; the result is computed on the others).

- `edges.csv`: columns `node_u,node_v`, one undirected edge per row.
- `nodes.csv`: column `node`, every node id (0 to the node count minus 1; a node may
  have no edge).
"""


def labels_csv(labels: np.ndarray) -> bytes:
    return ("node,community\n" + "".join(f"{i},c{int(c)}\n" for i, c in enumerate(labels))
            ).encode()


def _partition_labels(n: int, communities) -> np.ndarray:
    labels = np.zeros(n, dtype=np.int64)
    for k, members in enumerate(sorted(communities, key=lambda c: min(c))):
        labels[sorted(members)] = k
    return labels


def _graph(n: int, edges: np.ndarray):
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((int(u), int(v)) for u, v in edges)
    return graph


def louvain_labels(n: int, edges: np.ndarray) -> np.ndarray:
    """The frozen SOTA: Louvain (Blondel et al. 2008) by networkx, fixed seed."""
    import networkx as nx

    return _partition_labels(n, nx.community.louvain_communities(_graph(n, edges),
                                                                 seed=LOUVAIN_SEED))


def label_propagation_labels(n: int, edges: np.ndarray) -> np.ndarray:
    """The baseline: networkx's semi-synchronous label propagation (deterministic)."""
    import networkx as nx

    return _partition_labels(n, nx.community.label_propagation_communities(
        _graph(n, edges)))


def component_labels(n: int, edges: np.ndarray) -> np.ndarray:
    """No science: the connected components."""
    import networkx as nx

    return _partition_labels(n, nx.connected_components(_graph(n, edges)))


def conditional_posterior_labels(model: BlockModel, edges: np.ndarray) -> np.ndarray:
    """The oracle: each node's most probable block under the true model given the graph
    and every other node's true block. With edges ~ Poisson(c w_ij), the log posterior
    of block k for node i is log pi_k + sum_{j ~ i} log(omega[k, g_j] / vol_k)
    - c theta_i sum_l omega[k, l] / vol_k (terms free of k dropped), c the edge count
    over the total weight."""
    n, k = model.n, model.omega.shape[0]
    vol = np.bincount(model.blocks, weights=model.theta, minlength=k)
    vol = np.where(vol > 0, vol, 1.0)
    u, v = np.triu_indices(n, 1)
    c = len(edges) / model.weights(u, v).sum()
    sizes = np.bincount(model.blocks, minlength=k)
    score = np.where(sizes > 0, np.log(np.maximum(sizes, 1) / n), -np.inf)[None, :] \
        - c * model.theta[:, None] * (model.omega.sum(axis=1) / vol)[None, :]
    log_affinity = np.log(model.omega / vol[:, None])  # [k, g_j]
    for a, b in edges:
        score[a] += log_affinity[:, model.blocks[b]]
        score[b] += log_affinity[:, model.blocks[a]]
    return np.argmax(score, axis=1)


class CommunityRecovery(Family):
    name = "community-recovery"
    domain = "relational reasoning"
    task_type = "clustering"
    extra = "networks"
    sota_citation = ("Blondel, Guillaume, Lambiotte & Lefebvre 2008, Fast unfolding of "
                     "communities in large networks, J. Stat. Mech. P10008")
    version = "1"
    task_name = "Recover the hidden communities of a sparse network"
    sub_domain = "network science"
    tags = ("community detection", "networks", "stochastic block model", "clustering",
            "naturegym")
    libraries = ("numpy", "networkx")
    metric = Metric("adjusted_rand_index", "1",
                    "adjusted Rand index of the communities against the true blocks",
                    direction="higher_is_better")
    metric_function = "csv_adjusted_rand"
    metric_output = {"file": OUTPUT, "keys": ["node"], "key": "community"}
    sota_identifiers = ("louvain_communities", "louvain_labels", "Louvain", "Blondel")
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("label propagation",
                              "networkx's semi-synchronous label propagation (Raghavan et "
                              "al. 2007; Cordasco & Gargano 2010)"),
        "sota": Reference("Louvain modularity maximisation",
                          "networkx.community.louvain_communities, resolution 1, a fixed "
                          "seed (Blondel et al. 2008)", SOTA_VERSION),
        "bound": Reference("the true conditional posterior",
                           "each node's most probable block under the true parameters "
                           "given every other node's true block"),
    }

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The network and the true blocks (no reference is run; the same random stream
        as `draw`)."""
        n = int(rng.integers(400, 801))  # nuisances: drawn apart from the hidden values
        m = int(round(rng.uniform(1.5, 3.0) * n))
        hidden = {"blocks": float(rng.integers(3, 9)),
                  "mixing": float(rng.uniform(0.2, 0.4)),
                  "degree_exponent": float(rng.uniform(2.3, 3.5))}
        model = planted_partition(n, int(hidden["blocks"]), hidden["mixing"],
                                  hidden["degree_exponent"], rng)
        edges = sample_edges(model, m, rng)
        return Draw(
            data={"edges.csv": pairs_csv(edges),
                  "nodes.csv": ("node\n" + "".join(f"{i}\n" for i in range(n))).encode()},
            truth={OUTPUT: labels_csv(model.blocks)}, hidden=hidden, outputs={},
            floor=1.0,  # a clustering has no noise floor: the best reachable index
            extra={"model": model, "edges": edges})

    def draw(self, rng: np.random.Generator) -> Draw:
        draw = self.draw_data(rng)
        model, edges = draw.extra.pop("model"), draw.extra.pop("edges")
        n = model.n
        draw.outputs = {
            "baseline": {OUTPUT: labels_csv(label_propagation_labels(n, edges))},
            "sota": {OUTPUT: labels_csv(louvain_labels(n, edges))},
            "oracle": {OUTPUT: labels_csv(conditional_posterior_labels(model, edges))},
        }
        return draw

    def _read(self, data_dir: Path) -> tuple[int, np.ndarray]:
        return read_nodes(data_dir / "nodes.csv"), read_pairs(data_dir / "edges.csv")

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        n, edges = self._read(data_dir)
        return {OUTPUT: labels_csv(label_propagation_labels(n, edges))}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        return {OUTPUT: labels_csv(np.zeros(read_nodes(data_dir / "nodes.csv"), np.int64))}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """One community for all (the majority class), and the connected components."""
        n, edges = self._read(data_dir)
        return {"constant": self.constant_outputs(data_dir),
                "connected-components": {OUTPUT: labels_csv(component_labels(n, edges))}}
