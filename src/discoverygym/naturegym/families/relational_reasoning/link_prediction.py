"""Link prediction on a network with hidden communities.

A network is drawn from a degree-corrected stochastic block model (`networks/sbm.py`,
in the shared layer: both relational families draw from it) whose block
count, mixing and degree spread are hidden. 15 % of its edges are held out; the agent
sees the rest and a list of candidate pairs (the held-out edges among twenty times as
many non-edges, drawn in proportion to their endpoints' observed degrees, so that degree
alone does not tell them apart) and scores each pair. The metric is the average
precision of the scores against which candidates are held-out edges.

- baseline: preferential attachment (the product of the endpoints' degrees);
- state of the art: the Adamic-Adar index (Adamic & Adar 2003; the link-prediction
  benchmark of Liben-Nowell & Kleinberg 2007) by networkx;
- oracle: the model's true edge weight of each pair (blocks and propensities known).

Why there is room above the SOTA: Adamic-Adar scores a pair by its common neighbours, and
in a sparse network most held-out edges have none, so they tie with most non-edges at 0.
A method that recovers the blocks and the propensities (a fitted block model, a spectral
embedding) ranks those pairs too; the oracle shows how far that goes."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from ....networks.sbm import planted_partition, sample_edges
from ..base import Draw, Family, Metric, Reference

HELD_OUT = 0.15
NEGATIVES_PER_POSITIVE = 20
SOTA_VERSION = "adamic-adar/networkx-3"
KEYS = ["node_u", "node_v"]
SCORE = "link_score"
OUTPUT = "scores.csv"

_README = """# Predict the missing links of a network

## Scientific problem

A network of nodes joined by undirected edges was observed incompletely: some of its
edges were removed at random before the observation. The network was formed by a
process whose details are not given.

## Task objective

For each network, score the candidate node pairs so that the pairs that are missing
edges of the network rank above those that are not edges.

## Dataset information

`data/<network>/edges.csv`: the observed edges; `data/<network>/candidates.csv`: the
pairs to score. See `data_description.md`.

## Evaluation metrics

Average precision of your scores against which candidate pairs are missing edges
(higher is better; tied scores share their precision), compared with a reference value
per network.

## Output format

For each network write `<OUTPUT_DIR>/<network>/scores.csv` with the header
`node_u,node_v,link_score` and one row per candidate pair (any order), `link_score` a
finite number (higher: more likely an edge).

## Submission guidelines

A missing or unreadable file, a wrong header, a missing, repeated or extra pair, or a
non-finite score counts as a failure for that network. You may ask for an evaluation of
your current outputs.
"""

_DATA = f"""# Data

Each folder under `data/` is one network; `{{dev}}` is the development network
(`evaluate` scores only it; the result is computed on the others).

- `edges.csv`: columns `node_u,node_v`, one observed undirected edge per row (node ids
  are integers from 0 to the node count minus 1; a node may have no observed edge).
- `nodes.csv`: column `node`, every node id of the network.
- `candidates.csv`: columns `node_u,node_v`, the pairs to score. About one in
  {NEGATIVES_PER_POSITIVE + 1} is a missing edge; the others are pairs that are not
  edges, drawn with a chance that grows with the observed degrees of their endpoints.
"""


def pairs_csv(pairs: np.ndarray, values: np.ndarray | None = None,
              fmt: str = "{!r}") -> bytes:
    """`node_u,node_v[,link_score]` rows (floats at full precision by default)."""
    header = KEYS + ([SCORE] if values is not None else [])
    lines = [",".join(header)]
    for k, (u, v) in enumerate(pairs):
        row = [str(int(u)), str(int(v))]
        if values is not None:
            row.append(fmt.format(float(values[k])))
        lines.append(",".join(row))
    return ("\n".join(lines) + "\n").encode()


def read_pairs_bytes(content: bytes) -> np.ndarray:
    """The node pairs of a `node_u,node_v` CSV as an (k, 2) int array."""
    rows = list(csv.reader(io.StringIO(content.decode())))[1:]
    return np.array([[int(r[0]), int(r[1])] for r in rows if r], dtype=np.int64).reshape(-1, 2)


def read_nodes_bytes(content: bytes) -> int:
    """The node count of a `node` CSV."""
    return len([r for r in list(csv.reader(io.StringIO(content.decode())))[1:] if r])


def read_pairs(path: Path) -> np.ndarray:
    return read_pairs_bytes(path.read_bytes())


def read_nodes(path: Path) -> int:
    return read_nodes_bytes(path.read_bytes())


def _graph(n: int, edges: np.ndarray):
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((int(u), int(v)) for u, v in edges)
    return graph


def adamic_adar_scores(n: int, edges: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The frozen SOTA: networkx's Adamic-Adar index of each candidate pair in the
    observed network (sum over common neighbours z of 1 / log deg z)."""
    import networkx as nx

    graph = _graph(n, edges)
    pairs = [(int(u), int(v)) for u, v in candidates]
    return np.array([s for _, _, s in nx.adamic_adar_index(graph, pairs)], dtype=float)


def preferential_attachment_scores(n: int, edges: np.ndarray,
                                   candidates: np.ndarray) -> np.ndarray:
    """The baseline: networkx's preferential-attachment score (degree product)."""
    import networkx as nx

    graph = _graph(n, edges)
    pairs = [(int(u), int(v)) for u, v in candidates]
    return np.array([s for _, _, s in nx.preferential_attachment(graph, pairs)], dtype=float)


def degree_proportional_negatives(n: int, observed: np.ndarray, forbidden: set,
                                  count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` distinct non-edges, each endpoint drawn with probability in proportion to
    its observed degree + 1 (so degree alone does not separate them from held-out edges)."""
    weight = np.bincount(observed.ravel(), minlength=n) + 1.0
    p = weight / weight.sum()
    chosen: set[tuple[int, int]] = set()
    for _ in range(100):
        u = rng.choice(n, size=2 * count, p=p)
        v = rng.choice(n, size=2 * count, p=p)
        for a, b in zip(u.tolist(), v.tolist(), strict=True):
            pair = (min(a, b), max(a, b))
            if a != b and pair not in forbidden and pair not in chosen:
                chosen.add(pair)
                if len(chosen) == count:
                    return np.array(sorted(chosen), dtype=np.int64)
    raise ValueError("could not draw enough non-edges")


class LinkPrediction(Family):
    name = "link-prediction"
    domain = "relational reasoning"
    task_type = "ranking"
    extra = "networks"
    sota_citation = ("Adamic & Adar 2003, Friends and neighbors on the Web, Social Networks "
                     "25:211; as benchmarked by Liben-Nowell & Kleinberg 2007, J. Am. Soc. "
                     "Inf. Sci. Technol. 58:1019")
    version = "1"
    task_name = "Predict the missing links of a network with hidden communities"
    sub_domain = "network science"
    tags = ("link prediction", "networks", "stochastic block model", "ranking", "naturegym")
    libraries = ("numpy", "networkx")
    metric = Metric("average_precision", "1",
                    "average precision of the candidate scores against the held-out edges",
                    direction="higher_is_better")
    metric_function = "csv_average_precision"
    metric_output = {"file": OUTPUT, "keys": KEYS, "key": SCORE}
    sota_identifiers = ("adamic_adar_index", "adamic_adar_scores", "Adamic-Adar",
                        "Adamic")
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("preferential attachment",
                              "the product of the endpoints' observed degrees "
                              "(networkx.preferential_attachment)"),
        "sota": Reference("Adamic-Adar index",
                          "the sum over the pair's common neighbours of 1/log(degree), in "
                          "the observed network (Adamic & Adar 2003; Liben-Nowell & "
                          "Kleinberg 2007; networkx.adamic_adar_index)", SOTA_VERSION),
        "bound": Reference("the true edge weights",
                           "the block model's weight of each pair with its blocks, "
                           "propensities and affinities known"),
    }

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The network, the candidates and the truth (no reference is run; the same
        random stream as `draw`)."""
        # nuisances (visible through the files' lengths), drawn apart from the hidden
        # structure
        n = int(rng.integers(300, 601))
        m = int(round(rng.uniform(2.5, 5.0) * n))
        hidden = {"blocks": float(rng.integers(5, 15)),
                  "mixing": float(rng.uniform(0.03, 0.25)),
                  "degree_exponent": float(rng.uniform(2.3, 3.5))}
        model = planted_partition(n, int(hidden["blocks"]), hidden["mixing"],
                                  hidden["degree_exponent"], rng)
        edges = sample_edges(model, m, rng)
        held = rng.random(m) < HELD_OUT
        positives, observed = edges[held], edges[~held]
        if len(positives) < 10:
            raise ValueError("too few held-out edges")
        negatives = degree_proportional_negatives(
            n, observed, set(map(tuple, edges.tolist())),
            NEGATIVES_PER_POSITIVE * len(positives), rng)
        candidates = np.vstack([positives, negatives])
        labels = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
        order = np.lexsort((candidates[:, 1], candidates[:, 0]))
        candidates, labels = candidates[order], labels[order]
        return Draw(
            data={"edges.csv": pairs_csv(observed), "candidates.csv": pairs_csv(candidates),
                  "nodes.csv": ("node\n" + "".join(f"{i}\n" for i in range(n))).encode()},
            truth={OUTPUT: pairs_csv(candidates, labels, "{:.0f}")}, hidden=hidden,
            outputs={},
            floor=1.0,  # a ranking has no noise floor: the best reachable AP
            extra={"model": model, "n": n, "observed": observed, "candidates": candidates})

    def draw(self, rng: np.random.Generator) -> Draw:
        draw = self.draw_data(rng)
        model, n = draw.extra.pop("model"), draw.extra.pop("n")
        observed, candidates = draw.extra.pop("observed"), draw.extra.pop("candidates")
        draw.outputs = {
            "baseline": {OUTPUT: pairs_csv(candidates,
                                           preferential_attachment_scores(n, observed,
                                                                          candidates))},
            "sota": {OUTPUT: pairs_csv(candidates,
                                       adamic_adar_scores(n, observed, candidates))},
            "oracle": {OUTPUT: pairs_csv(candidates,
                                         model.weights(candidates[:, 0], candidates[:, 1]))},
        }
        return draw

    def _read(self, data_dir: Path) -> tuple[int, np.ndarray, np.ndarray]:
        return (read_nodes(data_dir / "nodes.csv"), read_pairs(data_dir / "edges.csv"),
                read_pairs(data_dir / "candidates.csv"))

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        n, edges, candidates = self._read(data_dir)
        return {OUTPUT: pairs_csv(candidates,
                                  preferential_attachment_scores(n, edges, candidates))}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        candidates = read_pairs(data_dir / "candidates.csv")
        return {OUTPUT: pairs_csv(candidates, np.zeros(len(candidates)))}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Constant scores, and ranking by degree alone (the candidates' shortcut)."""
        return {"constant": self.constant_outputs(data_dir),
                "degree-ranking": self.baseline_outputs(data_dir)}
