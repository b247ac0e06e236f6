"""Physics checks of shipped tpbench references that are not a second computation of the
same function, so they do not fit a problem's `independent_check` (which
`discoverygym tpbench check` runs against the reference on the test inputs): a
conservation law, a brute-force enumeration on a finite ring, and the sign of a force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from discoverygym.suites.tpbench.problem import builtin_problem_dir, load_problem


def reference(problem_id: str):
    """The reference function of a shipped problem (our own code, run on the host)."""
    problem = load_problem(builtin_problem_dir() / f"{problem_id}.yaml")
    namespace: dict = {}
    exec(compile(problem.reference, problem.id, "exec"), namespace)  # noqa: S102
    return namespace[problem.function]


def test_demkov_osherov_populations_are_conserved():
    f = reference("demkov-osherov-three-level")
    rng = np.random.default_rng(7)
    for _ in range(20):
        v, hbar = rng.uniform(0.3, 3.0), rng.uniform(0.5, 2.0)
        e1, e2, g1, g2 = rng.uniform(-2, 2, 4)
        populations = f(v, e1, e2, g1, g2, hbar)
        assert min(populations) >= 0 and sum(populations) == pytest.approx(1.0, rel=1e-12)


def test_ising_bond_correlation_by_brute_force_enumeration():
    """A ring of 18 spins summed over all 2^18 states, where finite-size effects are
    below the tolerance (the problem's own check is the transfer-matrix route)."""
    f = reference("ising-chain-bond-correlation")
    n = 18
    states = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    bonds = states * np.roll(states, -1, axis=1)
    for J, h, T in [(0.5, 0.3, 1.0), (-0.4, 1.0, 1.0)]:
        energy = -J * bonds.sum(1) - h * states.sum(1)
        w = np.exp(-(energy - energy.min()) / T)
        assert f(J, h, T) == pytest.approx(float(w @ bonds[:, 0] / w.sum()), rel=1e-6)


def test_grounded_plane_attracts_the_dipole():
    """W(d) rises towards 0 as the dipole is pulled away: the force -dW/dd is attractive
    at every orientation."""
    f = reference("dipole-grounded-plane-energy")
    for p, d, theta in [(1.3, 0.8, 0.7), (1.0, 1.0, 0.0), (2.0, 0.5, 2.5), (1.0, 2.0, math.pi)]:
        eps = 1e-5 * d
        assert (f(p, d + eps, theta) - f(p, d - eps, theta)) / (2 * eps) > 0
