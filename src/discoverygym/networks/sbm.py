"""The degree-corrected stochastic block model NatureGym's relational families (link
prediction, community recovery) draw their networks from
(Karrer & Newman 2011): node i has a block g_i and a degree propensity theta_i, and an
edge {i, j} has weight theta_i theta_j omega[g_i, g_j] / (vol[g_i] vol[g_j]), vol[k] being
block k's total propensity, so that omega[a, b] is the expected share of edge ends that
join blocks a and b.

The edge COUNT is not a model parameter here: a network of exactly `m` edges is drawn
without replacement in proportion to the weights. The agent sees m (the file's length), so
m is drawn as a nuisance independent of every hidden value (the leak gate's rule), and the
hidden structure (block count, mixing, degree spread) decides only WHICH pairs are joined."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockModel:
    blocks: np.ndarray  # block of each node, shape (n,)
    theta: np.ndarray  # degree propensity of each node, shape (n,)
    omega: np.ndarray  # block-pair affinity, shape (K, K), symmetric

    @property
    def n(self) -> int:
        return len(self.blocks)

    def weights(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The model's (unnormalised) edge weight of each pair (u[k], v[k]); 0 on loops."""
        k = self.omega.shape[0]
        vol = np.bincount(self.blocks, weights=self.theta, minlength=k)
        vol = np.where(vol > 0, vol, 1.0)
        gu, gv = self.blocks[u], self.blocks[v]
        w = self.theta[u] * self.theta[v] * self.omega[gu, gv] / (vol[gu] * vol[gv])
        return np.where(u == v, 0.0, w)


def planted_partition(n: int, blocks: int, mixing: float, exponent: float,
                      rng: np.random.Generator) -> BlockModel:
    """Blocks of random sizes (uniform labels), a share `mixing` of edge ends between
    blocks (spread evenly over the other blocks), and Pareto propensities with tail
    exponent `exponent` (degree distribution ~ d^-exponent), capped at sqrt(n) so that no
    node exceeds the simple-graph limit."""
    if blocks < 2 or not 0.0 <= mixing < 1.0 or exponent <= 2.0:
        raise ValueError("planted partition needs >= 2 blocks, 0 <= mixing < 1, exponent > 2")
    labels = rng.integers(0, blocks, n)
    theta = np.minimum((1.0 - rng.random(n)) ** (-1.0 / (exponent - 1.0)), np.sqrt(n))
    omega = np.full((blocks, blocks), mixing / (blocks - 1))
    np.fill_diagonal(omega, 1.0 - mixing)
    return BlockModel(labels, theta, omega)


def sample_edges(model: BlockModel, m: int, rng: np.random.Generator) -> np.ndarray:
    """Exactly m distinct edges (u < v), drawn without replacement with probability in
    proportion to the model's weights; shape (m, 2), sorted."""
    u, v = np.triu_indices(model.n, 1)
    w = model.weights(u, v)
    if np.count_nonzero(w) < m:
        raise ValueError("fewer possible edges than requested")
    chosen = rng.choice(len(w), size=m, replace=False, p=w / w.sum())
    edges = np.stack([u[chosen], v[chosen]], axis=1)
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))]
