"""Gene-regulatory network inference from simulated single-cell expression (ranking).

A hidden sparse network of 30 genes: a few master regulators ("hubs") whose production
varies from cell to cell (cell state), and targets activated or repressed by one or two
regulators through Hill functions, sometimes in cascades. Each cell is an independent
run of the chemical-Langevin dynamics to steady state (intrinsic noise); the agent sees
the cells' UMI counts after capture with a varying library size and dropout (technical
noise). The agent scores every ordered gene pair (regulator -> target); the metric is
the average precision of those scores against the true directed edges.

- baseline: |Pearson correlation| of the raw counts (no library-size normalisation);
- state of the art: GENIE3 (Huynh-Thu et al. 2010), tree ensembles per target gene on
  the normalised log expression, edge weight the regulator's importance;
- oracle: the true network, each edge scored by its true interaction strength (average
  precision 1: the truth is the network itself, so there is no noise floor).

Every nuisance quantity the agent sees (gene and cell counts, the file shapes, the
capture depth, the dropout rate) is a constant of the family, so none of them can carry
a hidden value; the truth depends only on the hidden network, which only the counts
reveal."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base import FULL_PRECISION, Draw, Family, Metric, Reference, npy_bytes

N_GENES = 30
N_CELLS = 300
GENES = tuple(f"g{k + 1:02d}" for k in range(N_GENES))
# The dynamics: Euler-Maruyama of dx = (production - x) dt + s sqrt(x) dW (unit
# degradation), run long enough (10 degradation times) to forget the start.
STEPS, DT = 500, 0.02
INTRINSIC_NOISE = 1.5
HILL_COEFFICIENT = 2.0
BASAL_RATE = 0.1
# Technical noise: UMIs per unit of expression, the cells' library-size spread (log sd)
# and the dropout probability.
CAPTURE_DEPTH = 50.0
LIBRARY_LOG_SD = 0.6
DROPOUT = 0.1
# The frozen state of the art's settings (GENIE3 with Extra-Trees, K = sqrt).
GENIE3_TREES = 100
GENIE3_VERSION = "genie3-et-100-sqrt/1"


@dataclass(frozen=True)
class Network:
    """weights[i, j] != 0: gene i regulates gene j (> 0 activates, < 0 represses)."""

    weights: np.ndarray
    thresholds: np.ndarray  # Hill threshold of each gene acting as a regulator
    hubs: np.ndarray  # indices of the master regulators
    hub_log_sd: float  # cell-to-cell spread of the hubs' production (log sd)

    @property
    def edges(self) -> np.ndarray:
        return self.weights != 0


def draw_network(rng: np.random.Generator) -> Network:
    """A random hierarchy: 3-5 hubs, every other gene regulated by one or two genes
    earlier in a random order, hubs chosen six times more often (scale-free-like out
    degree), so there are hub targets, co-regulated siblings and cascades."""
    n_hubs = int(rng.integers(3, 6))
    order = rng.permutation(N_GENES)
    hubs = order[:n_hubs]
    weights = np.zeros((N_GENES, N_GENES))
    for position in range(n_hubs, N_GENES):
        target = order[position]
        candidates = order[:position]
        preference = np.where(np.isin(candidates, hubs), 6.0, 1.0)
        n_regulators = int(rng.integers(1, 3))
        for regulator in rng.choice(candidates, size=n_regulators, replace=False,
                                    p=preference / preference.sum()):
            sign = 1.0 if rng.random() < 0.7 else -1.0
            weights[regulator, target] = sign * rng.uniform(1.0, 3.0)
    return Network(weights=weights, thresholds=rng.uniform(0.5, 1.5, N_GENES),
                   hubs=np.sort(hubs), hub_log_sd=float(rng.uniform(0.6, 1.0)))


def production(x: np.ndarray, network: Network, basal: np.ndarray) -> np.ndarray:
    """Production rate of every gene in every cell (cells x genes): basal plus, per
    regulator, w * a(x) for activation and |w| * (1 - a(x)) for repression, with the
    Hill activation a(x) = x^n / (K^n + x^n)."""
    ratio = (np.maximum(x, 0.0) / network.thresholds) ** HILL_COEFFICIENT
    active = ratio / (1.0 + ratio)
    w = network.weights
    return basal + active @ np.where(w > 0, w, 0.0) + (1.0 - active) @ np.where(w < 0, -w, 0.0)


def cell_basal_rates(rng: np.random.Generator, network: Network, n_cells: int) -> np.ndarray:
    """Basal production per cell: the hubs' log-normal across cells (cell state)."""
    basal = np.full((n_cells, N_GENES), BASAL_RATE)
    hubs = network.hubs
    basal[:, hubs] = np.exp(rng.normal(0.0, network.hub_log_sd, (n_cells, len(hubs))))
    return basal


def simulate_expression(rng: np.random.Generator, network: Network, basal: np.ndarray,
                        noise: float = INTRINSIC_NOISE) -> np.ndarray:
    """Each cell (row of `basal`) run independently to steady state (cells x genes)."""
    x = rng.uniform(0.0, 1.0, basal.shape)
    root_dt = np.sqrt(DT)
    for _ in range(STEPS):
        drift = production(x, network, basal) - x
        kick = noise * np.sqrt(x + 1e-3) * rng.standard_normal(x.shape) if noise else 0.0
        x = np.maximum(x + DT * drift + root_dt * kick, 0.0)
    return x


def measure_counts(rng: np.random.Generator, expression: np.ndarray) -> np.ndarray:
    """UMI counts: Poisson capture at a per-cell library size, then dropout."""
    library = np.exp(rng.normal(0.0, LIBRARY_LOG_SD, (expression.shape[0], 1)))
    counts = rng.poisson(expression * CAPTURE_DEPTH * library)
    counts[rng.random(counts.shape) < DROPOUT] = 0
    return counts.astype(np.int32)


def log_normalise(counts: np.ndarray) -> np.ndarray:
    """log1p of counts scaled to the mean library size (the usual scRNA-seq step)."""
    counts = np.asarray(counts, float)
    size = counts.sum(axis=1, keepdims=True)
    return np.log1p(counts / np.maximum(size, 1.0) * max(float(size.mean()), 1.0))


def genie3_scores(expression: np.ndarray, random_state: int,
                  n_trees: int = GENIE3_TREES) -> np.ndarray:
    """GENIE3 (Huynh-Thu, Irrthum, Wehenkel and Geurts 2010, PLoS ONE 5:e12776): for each
    target gene, a tree ensemble (Extra-Trees, K = sqrt of the regulators) predicts its
    standardised expression from every other gene's; the weight of regulator -> target
    is the regulator's total variance reduction (unnormalised importance, as in the
    authors' Python code). Returns scores[regulator, target], zero on the diagonal."""
    from sklearn.ensemble import ExtraTreesRegressor

    x = np.asarray(expression, float)
    spread = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    n = x.shape[1]
    scores = np.zeros((n, n))
    for target in range(n):
        regulators = np.array([i for i in range(n) if i != target])
        forest = ExtraTreesRegressor(n_estimators=n_trees, max_features="sqrt",
                                     random_state=random_state, n_jobs=1)
        forest.fit(x[:, regulators], x[:, target])
        importance = np.mean([tree.tree_.compute_feature_importances(normalize=False)
                              for tree in forest.estimators_], axis=0)
        scores[regulators, target] = importance
    return scores


def pearson_scores(counts: np.ndarray) -> np.ndarray:
    """|Pearson correlation| of the raw counts, symmetric, zero on the diagonal (a
    constant gene correlates with nothing)."""
    x = np.asarray(counts, float)
    x = x - x.mean(axis=0)
    norm = np.sqrt((x ** 2).sum(axis=0))
    norm = np.where(norm > 0, norm, np.inf)
    corr = np.abs((x.T @ x) / np.outer(norm, norm))
    corr = (corr + corr.T) / 2.0
    np.fill_diagonal(corr, 0.0)
    return corr


def edges_csv(scores: np.ndarray, fmt: str = "{:.6g}") -> bytes:
    """The answer's format: one row per ordered gene pair, regulator first."""
    lines = ["regulator,target,score"]
    for i, regulator in enumerate(GENES):
        for j, target in enumerate(GENES):
            if i != j:
                lines.append(f"{regulator},{target},{fmt.format(float(scores[i, j]))}")
    return ("\n".join(lines) + "\n").encode()


def read_counts(data_dir: Path) -> np.ndarray:
    counts = np.load(data_dir / "counts.npy", allow_pickle=False)
    if counts.shape != (N_CELLS, N_GENES):
        raise ValueError(f"counts.npy has shape {counts.shape}, expected {(N_CELLS, N_GENES)}")
    return counts


_README = f"""# Infer the gene-regulatory network behind single-cell expression

## Scientific problem

A set of {N_GENES} genes regulate one another: some transcription factors activate or
repress others, and the cell-to-cell variation of a few upstream regulators propagates
through the network. The expression of every gene was measured in {N_CELLS} individual
cells by UMI counting, with the usual technical noise of single-cell sequencing
(incomplete capture, cell-to-cell differences in sequencing depth, dropout).

## Task objective

For each data set, score every ordered pair of genes (regulator, target) by how likely
it is that the regulator directly regulates the target. Direct, directed regulation is
what counts: a pair that is only correlated through a common regulator or a longer path
is not an edge, and the edge from A to B is not the edge from B to A.

## Dataset information

`data/<set>/counts.npy`: the UMI counts, one row per cell and one column per gene;
`data/<set>/genes.txt`: the gene names in column order. See `data_description.md`.

## Evaluation metrics

Average precision of the scores against the true directed edges (higher is better; 1
means every true edge is ranked above every other pair), compared with a reference
value per data set.

## Output format

For each data set write `<OUTPUT_DIR>/<set>/edges.csv` with the header
`regulator,target,score` and one row for every ordered pair of distinct genes
({N_GENES * (N_GENES - 1)} rows, any order); a higher score means a more likely edge.

## Submission guidelines

A missing or unreadable file, a wrong header, a missing, repeated or unknown pair or a
non-finite score counts as a failure for that data set. You may ask for an evaluation of
your current outputs.
"""

_DATA = f"""# Data

Each folder under `data/` is one data set (its own network); `{{dev}}` is the development
set (`evaluate` scores only it; the result is computed on the others).

- `counts.npy`: int32 array of shape ({N_CELLS}, {N_GENES}), UMI counts per cell (row)
  and gene (column). Counts were captured at about {CAPTURE_DEPTH:g} UMIs per unit of
  expression, with a log-normal library-size factor per cell (log sd {LIBRARY_LOG_SD:g})
  and a dropout probability of {DROPOUT:g} per count.
- `genes.txt`: the {N_GENES} gene names, one per line, in column order.

Cells are independent: each is an unsynchronised snapshot of the same network.
"""


class GeneNetworkInference(Family):
    name = "grn-inference"
    domain = "cellular omics"
    task_type = "ranking"
    extra = "bio"
    sota_citation = ("GENIE3: Huynh-Thu, Irrthum, Wehenkel and Geurts (2010), Inferring "
                     "regulatory networks from expression data using tree-based methods, "
                     "PLoS ONE 5(9): e12776")
    version = "1"
    task_name = "Infer a gene-regulatory network from single-cell expression"
    sub_domain = "gene regulation"
    tags = ("gene regulatory network", "single-cell", "ranking", "naturegym")
    libraries = ("numpy", "scikit-learn")
    metric = Metric("average_precision", "",
                    "average precision of the ordered gene-pair scores against the true "
                    "directed regulatory edges", "higher_is_better")
    metric_function = "csv_average_precision"
    metric_output = {"file": "edges.csv", "keys": ["regulator", "target"], "key": "score"}
    sota_identifiers = ("genie3_scores", "GENIE3")
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("correlation of raw counts",
                              "|Pearson correlation| between the two genes' raw counts, "
                              "the same score for both directions"),
        "sota": Reference("GENIE3 (tree ensembles per target gene)",
                          "for each target, Extra-Trees regression (100 trees, K = sqrt) "
                          "of its standardised log-normalised expression on every other "
                          "gene; edge weight the regulator's importance (Huynh-Thu et al. "
                          "2010)", GENIE3_VERSION),
        "bound": Reference("the true network",
                           "every true edge scored by its interaction strength |w|, every "
                           "other pair 0 (average precision 1)"),
    }

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The data and hidden values without the references (GENIE3 is the cost)."""
        network = draw_network(rng)
        basal = cell_basal_rates(rng, network, N_CELLS)
        counts = measure_counts(rng, simulate_expression(rng, network, basal))
        edges = network.edges
        strengths = np.abs(network.weights[edges])
        hidden = {
            "edge_count": float(edges.sum()),
            "hub_count": float(len(network.hubs)),
            "hub_log_sd": network.hub_log_sd,
            "activating_fraction": float((network.weights[edges] > 0).mean()),
            "mean_edge_strength": float(strengths.mean()),
            "mean_threshold": float(network.thresholds.mean()),
            "hub_out_degree": float(edges[network.hubs].sum() / len(network.hubs)),
        }
        return Draw(
            data={"counts.npy": npy_bytes(counts),
                  "genes.txt": ("\n".join(GENES) + "\n").encode()},
            truth={"edges.csv": edges_csv(edges.astype(float), "{:.0f}")},
            hidden=hidden, outputs={}, floor=1.0,
            extra={"counts": counts, "weights": network.weights})

    def draw(self, rng: np.random.Generator) -> Draw:
        draw = self.draw_data(rng)
        counts, weights = draw.extra.pop("counts"), draw.extra.pop("weights")
        sota = genie3_scores(log_normalise(counts), int(rng.integers(0, 2**31 - 1)))
        draw.outputs = {"baseline": {"edges.csv": edges_csv(pearson_scores(counts))},
                        "sota": {"edges.csv": edges_csv(sota, FULL_PRECISION)},
                        "oracle": {"edges.csv": edges_csv(np.abs(weights), FULL_PRECISION)}}
        return draw

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        return {"edges.csv": edges_csv(pearson_scores(read_counts(data_dir)))}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        return {"edges.csv": edges_csv(np.zeros((N_GENES, N_GENES)))}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Constant, and two shortcuts of the format: rank every edge out of the most
        variable genes first (hubs vary most), or out of the most expressed."""
        expression = log_normalise(read_counts(data_dir))
        by_variance = np.repeat(expression.var(axis=0)[:, None], N_GENES, axis=1)
        by_mean = np.repeat(expression.mean(axis=0)[:, None], N_GENES, axis=1)
        return {"constant": self.constant_outputs(data_dir),
                "regulator-variance": {"edges.csv": edges_csv(by_variance)},
                "regulator-mean": {"edges.csv": edges_csv(by_mean)}}
