"""Fitting a pair-force law to measured positions over a short window, shared by the
`newtonian` baseline and the law-aware oracle (both under the paper protocol). Pure
NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np


def inverse_square_kernel(sep: np.ndarray, r: np.ndarray) -> list[np.ndarray]:
    """Newtonian gravity: the pair acceleration per unit source mass, sep / r^3 (one
    term; written as the original fit wrote it, so its results stay bit for bit)."""
    return [sep / (r**3)[..., None]]


def fit_newtonian(times: np.ndarray, positions: np.ndarray, sigma: float,
                  mass_prior: tuple[float, float] = (0.5, 5.0), jump: float = 0.1,
                  kernel: Any = inverse_square_kernel, costs: list[float] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit x(t_end), v(t_end) of every particle and all masses to positions (K, N, D)
    measured at `times` (K,), assuming Newtonian gravity with G = 1.

    With known positions, a_i(t) = sum_j m_j (x_j - x_i) / |x_j - x_i|^3 is linear in the
    masses, so x_i(t) = x_i + v_i tau + sum_j m_j G_ij(tau) (tau = t - t_end, G_ij the
    double time integral of that pair term, by the trapezoid rule on the measured
    positions) is one linear least-squares problem. Samples before a collision or wall
    bounce (a jump in the second differences) are left out for that particle. A weak
    prior pulls masses toward the middle of their range; results are clipped to it.

    `kernel(sep, r)` gives the pair acceleration per unit source coefficient (|F| / (m_i
    m_j) times sep / r) as a list of terms; each term has its own coefficient per source
    particle j (the first term's is m_j, the others
    e.g. A m_j for the ripple law), so any force that is linear in known functions of r
    fits the same way. Returns (x_end, v_end, coefficients (terms, N)); with one term the
    last is the masses (N,), clipped to the prior. The weighted misfit (chi-square) is
    appended to `costs` when given, to compare kernels."""
    k, n, d = positions.shape
    tau = times - times[-1]
    sep = positions[:, None, :, :] - positions[:, :, None, :]  # [k, i, j] = x_j - x_i
    r = np.maximum(np.linalg.norm(sep, axis=-1), 1e-3)
    terms = kernel(sep, r)
    n_terms = len(terms)
    # Double integral from t_end backwards: first velocity-like, then position-like.
    steps = np.diff(tau)
    seconds = []
    for g in terms:
        g[:, np.arange(n), np.arange(n)] = 0.0
        first = np.zeros_like(g)
        for m in range(k - 2, -1, -1):
            first[m] = first[m + 1] - 0.5 * steps[m] * (g[m] + g[m + 1])
        second = np.zeros_like(g)
        for m in range(k - 2, -1, -1):
            second[m] = second[m + 1] - 0.5 * steps[m] * (first[m] + first[m + 1])
        seconds.append(second)

    start = np.zeros(n, dtype=int)  # first usable sample of each particle
    for i in range(n):
        for m in range(1, k - 1):
            left = (positions[m, i] - positions[m - 1, i]) / (tau[m] - tau[m - 1])
            right = (positions[m + 1, i] - positions[m, i]) / (tau[m + 1] - tau[m])
            if np.max(np.abs(right - left)) > jump + 10 * sigma / max(steps.min(), 1e-9):
                start[i] = m
    n_unknown = 2 * n * d + n_terms * n
    rows, rhs = [], []
    weight = 1.0 / sigma
    for i in range(n):
        for m in range(start[i], k):
            for c in range(d):
                row = np.zeros(n_unknown)
                row[i * d + c] = 1.0
                row[n * d + i * d + c] = tau[m]
                for t, second in enumerate(seconds):
                    row[2 * n * d + t * n: 2 * n * d + (t + 1) * n] = second[m, i, :, c]
                rows.append(weight * row)
                rhs.append(weight * positions[m, i, c])
    centre, spread = 0.5 * sum(mass_prior), 0.5 * (mass_prior[1] - mass_prior[0])
    for j in range(n):
        row = np.zeros(n_unknown)
        row[2 * n * d + j] = 1.0 / spread
        rows.append(row)
        rhs.append(centre / spread)
    design, target = np.array(rows), np.array(rhs)
    solution, *_ = np.linalg.lstsq(design, target, rcond=None)
    if costs is not None:
        costs.append(float(np.sum((design @ solution - target) ** 2)))
    x_end = solution[: n * d].reshape(n, d)
    v_end = solution[n * d: 2 * n * d].reshape(n, d)
    coefficients = solution[2 * n * d:].reshape(n_terms, n)
    coefficients[0] = np.clip(coefficients[0], *mass_prior)
    return x_end, v_end, coefficients[0] if n_terms == 1 else coefficients
