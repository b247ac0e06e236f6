"""Two non-interacting particles in 2D, each in a smoothed box well, evolved exactly.

Conventions (used everywhere in the quantum world):

- The domain is the square [-L/2, L/2]^2 (L = 10) with an n x n cell-centred grid per
  particle (n = 32, spacing h = L / n); cell (i, j) is centred at (-L/2 + (i + 1/2) h,
  -L/2 + (j + 1/2) h) and flattened as a = i * n + j.
- A one-particle wave function is a vector of n^2 grid values normalised so that
  sum |psi|^2 = 1 (cell probabilities, no h^2 factor). The joint state is the
  n^2 x n^2 matrix Psi[a, b] (particle 1 in cell a, particle 2 in cell b).
- hbar = 1. H = -laplacian_h / (2 m) + V with the 5-point finite-difference Laplacian
  on the periodic grid (the well keeps the particle away from the edges, so the
  boundary condition only fixes the stencil; the periodic choice makes the kinetic term
  diagonal in the discrete Fourier basis, which the split-operator cross-check uses).

Evolution: diagonalise each one-particle H once (numpy.linalg.eigh, cached per mass
and grid); then Psi(t) = U1 Psi0 U2^T with U = V diag(exp(-i E t)) V^T, two matrix
products per time. Everything here is float64 / complex128 numpy: eigh is LAPACK and
the two products are BLAS; JAX is used for the split-operator reference only."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

DOMAIN_SIZE = 10.0  # paper: the domain is 10 x 10
GRID_SIZE = 32  # paper: 32 x 32 grid per particle
WELL_SIZE = (8.0, 9.0)  # paper: the well is 8 (x) by 9 (y), centred in the domain
WELL_HEIGHT = 1000.0  # paper
WELL_EDGE_WIDTH = 0.1  # ours: tanh smoothing length of the well walls (about a third of a cell)


@dataclass(frozen=True)
class QuantumGrid:
    """The per-particle grid: n x n cells on [-size/2, size/2]^2."""

    n: int = GRID_SIZE
    size: float = DOMAIN_SIZE

    @property
    def spacing(self) -> float:
        return self.size / self.n

    def axis(self) -> np.ndarray:
        """Cell-centre coordinates along one axis."""
        return -0.5 * self.size + (np.arange(self.n) + 0.5) * self.spacing

    def cell_centres(self) -> tuple[np.ndarray, np.ndarray]:
        """x and y of every cell, flattened in the a = i * n + j order (length n^2)."""
        x, y = np.meshgrid(self.axis(), self.axis(), indexing="ij")
        return x.ravel(), y.ravel()

    def cell_of(self, x: float, y: float) -> int:
        """Flat index of the cell containing (x, y) (clipped to the grid)."""
        i = int(np.clip(math.floor((x + 0.5 * self.size) / self.spacing), 0, self.n - 1))
        j = int(np.clip(math.floor((y + 0.5 * self.size) / self.spacing), 0, self.n - 1))
        return i * self.n + j

    def region_weights(self, x_min: float, x_max: float, y_min: float,
                       y_max: float) -> np.ndarray:
        """Fraction of each cell's area inside the rectangle (length n^2): the
        probability of a region is sum(weights * cell probabilities), taking the density
        as constant within a cell."""
        edges = -0.5 * self.size + np.arange(self.n + 1) * self.spacing
        fx = np.clip(np.minimum(edges[1:], x_max) - np.maximum(edges[:-1], x_min), 0, None)
        fy = np.clip(np.minimum(edges[1:], y_max) - np.maximum(edges[:-1], y_min), 0, None)
        return (np.outer(fx, fy) / self.spacing**2).ravel()


def well_potential(grid: QuantumGrid, well_size: tuple[float, float] = WELL_SIZE,
                   height: float = WELL_HEIGHT,
                   edge_width: float = WELL_EDGE_WIDTH) -> np.ndarray:
    """Smoothed box well: V = height * (1 - w_x(x) w_y(y)), w a tanh-edged window of
    the given size centred at the origin (0 inside, `height` outside). Flat, length n^2."""
    axis = grid.axis()

    def window(half: float) -> np.ndarray:
        return 0.5 * (np.tanh((axis + half) / edge_width) - np.tanh((axis - half) / edge_width))

    inside = np.outer(window(0.5 * well_size[0]), window(0.5 * well_size[1]))
    return (height * (1.0 - inside)).ravel()


def laplacian_matrix(grid: QuantumGrid) -> np.ndarray:
    """The 5-point finite-difference Laplacian on the periodic n x n grid (n^2 x n^2)."""
    n, h = grid.n, grid.spacing
    one_d = -2.0 * np.eye(n) + np.roll(np.eye(n), 1, axis=1) + np.roll(np.eye(n), -1, axis=1)
    eye = np.eye(n)
    return (np.kron(one_d, eye) + np.kron(eye, one_d)) / h**2


def kinetic_symbol(grid: QuantumGrid, mass: float) -> np.ndarray:
    """Eigenvalues of -laplacian_h / (2 m) on the DFT modes (n x n, numpy fft order):
    the dispersion relation of the 5-point stencil, used by split-operator stepping."""
    k = 2.0 * math.pi * np.fft.fftfreq(grid.n, grid.spacing)
    one_d = (2.0 - 2.0 * np.cos(k * grid.spacing)) / grid.spacing**2
    return (one_d[:, None] + one_d[None, :]) / (2.0 * mass)


def hamiltonian(grid: QuantumGrid, mass: float, potential: np.ndarray) -> np.ndarray:
    """The one-particle Hamiltonian -laplacian_h / (2 m) + V (n^2 x n^2, real symmetric)."""
    return -laplacian_matrix(grid) / (2.0 * mass) + np.diag(potential)


@dataclass(frozen=True)
class Eigensystem:
    """Eigenvalues E (ascending) and orthonormal real eigenvectors (columns) of one H."""

    energies: np.ndarray
    vectors: np.ndarray


@lru_cache(maxsize=16)
def eigensystem(mass: float, n: int = GRID_SIZE, size: float = DOMAIN_SIZE,
                well_size: tuple[float, float] = WELL_SIZE, height: float = WELL_HEIGHT,
                edge_width: float = WELL_EDGE_WIDTH) -> Eigensystem:
    """Diagonalise the one-particle Hamiltonian (cached per mass and grid)."""
    grid = QuantumGrid(n, size)
    h = hamiltonian(grid, mass, well_potential(grid, well_size, height, edge_width))
    energies, vectors = np.linalg.eigh(h)
    return Eigensystem(energies, np.ascontiguousarray(vectors))


# ---- states -------------------------------------------------------------------------
def gaussian_packet(grid: QuantumGrid, centre: Sequence[float], width: float,
                    momentum: Sequence[float]) -> np.ndarray:
    """exp(-|r - r0|^2 / (4 width^2) + i p . r), normalised (sum |psi|^2 = 1); `width`
    is the standard deviation of the position density."""
    x, y = grid.cell_centres()
    dx, dy = x - centre[0], y - centre[1]
    psi = np.exp(-(dx**2 + dy**2) / (4.0 * width**2) + 1j * (momentum[0] * x + momentum[1] * y))
    return psi / np.linalg.norm(psi)


def entangled_state(psi1: np.ndarray, psi2: np.ndarray, grid: QuantumGrid,
                    coupling: float) -> np.ndarray:
    """Psi(r1, r2) proportional to psi1(r1) psi2(r2) exp(-coupling |r1 - r2|^2), normalised
    (coupling = lambda; 0 gives the product state)."""
    x, y = grid.cell_centres()
    factor = np.exp(-coupling * ((x[:, None] - x[None, :]) ** 2 + (y[:, None] - y[None, :]) ** 2))
    psi = psi1[:, None] * factor * psi2[None, :]
    norm = np.linalg.norm(psi)
    if not norm > 0:
        raise ValueError("the entanglement factor left no overlap between the packets")
    return psi / norm


def real_times_complex(real: np.ndarray, z: np.ndarray) -> np.ndarray:
    """real @ z for a real matrix and a complex one, as one real product: the complex
    matrix read as real with interleaved real and imaginary columns (numpy would otherwise
    promote the real factor and pay for a complex product, four times the work)."""
    product = real @ np.ascontiguousarray(z, dtype=np.complex128).view(np.float64)
    return product.view(np.complex128)


# ---- exact evolution ----------------------------------------------------------------
@dataclass(frozen=True)
class Propagator:
    """The exact propagator of two non-interacting particles, anchored at the state
    `anchor` at time t0: Psi(t) = U1(t - t0) Psi U2(t - t0)^T."""

    first: Eigensystem
    second: Eigensystem
    anchor: np.ndarray  # the joint state at t0
    t0: float = 0.0

    @classmethod
    def from_state(cls, first: Eigensystem, second: Eigensystem, psi: np.ndarray,
                   t0: float = 0.0) -> Propagator:
        return cls(first, second, psi, float(t0))

    @cached_property
    def coefficients(self) -> np.ndarray:
        """V1^T Psi V2: the anchor state in the product eigenbasis (computed on first use,
        so a state read only at t0, as after a collapse, costs nothing)."""
        return real_times_complex(self.second.vectors.T,
                                  real_times_complex(self.first.vectors.T, self.anchor).T).T

    def state(self, t: float) -> np.ndarray:
        """The joint state Psi at time t (n^2 x n^2 complex), t >= t0 or not."""
        tau = float(t) - self.t0
        if tau == 0.0:
            return self.anchor
        phase1 = np.exp(-1j * self.first.energies * tau)
        phase2 = np.exp(-1j * self.second.energies * tau)
        inner = phase1[:, None] * self.coefficients * phase2[None, :]
        # V1 inner V2^T, both products real (the eigenvectors are real): half the work of
        # complex ones
        left = real_times_complex(self.first.vectors, inner)
        return real_times_complex(self.second.vectors, left.T).T


@dataclass(frozen=True)
class BornRegions:
    """Region probabilities under the Born rule (p = 2) of the state a `Propagator`
    evolves, without forming the joint state. With Psi(t) = V1 D V2^T and
    D = P1(t) C P2(t) (C the anchor in the product eigenbasis, P(t) = diag(exp(-i E t))),
    particle 1's cell probabilities are the row norms of Psi, and V2 P2 is unitary:
    sum_b |Psi[a, b]|^2 = sum_m |(V1 P1 C)[a, m]|^2. A region needs only the rows of the
    cells it touches: one product of |region| x n^2 by n^2 x n^2 per query instead of two
    full ones per time, and a sum of squares, which no cancellation can spoil. Particle 2
    is the same with C^T. Equal to `region_probability` on `Propagator.state` to rounding."""

    first: Eigensystem
    second: Eigensystem
    coefficients: np.ndarray
    t0: float = 0.0

    @classmethod
    def of(cls, propagator: Propagator) -> BornRegions:
        return cls(propagator.first, propagator.second, propagator.coefficients, propagator.t0)

    @cached_property
    def norm(self) -> float:
        """sum |Psi|^2, the same at every time (the evolution is unitary)."""
        return float(np.vdot(self.coefficients, self.coefficients).real)

    def probability(self, t: float, particle: int, weights: np.ndarray) -> float:
        if particle == 1:
            system, coefficients = self.first, self.coefficients
        elif particle == 2:
            system, coefficients = self.second, self.coefficients.T
        else:
            raise ValueError("particle must be 1 or 2")
        cells = np.flatnonzero(weights)
        if cells.size == 0:
            return 0.0
        rotated = np.exp(-1j * system.energies * (float(t) - self.t0))[:, None] * coefficients
        # a row's squared norm: the sum of squares of its real and imaginary parts
        rows = real_times_complex(system.vectors[cells], rotated).view(np.float64)
        density = np.einsum("ij,ij->i", rows, rows)
        return float(density @ weights[cells] / self.norm)


@dataclass(frozen=True)
class ProductPropagator:
    """The exact propagator of a product state left(r1) right(r2) anchored at t0, as
    after a collapse: each factor evolves on its own, so a state costs two one-particle
    evolutions instead of two joint matrix products (the same state as `Propagator`
    on the outer product, to rounding)."""

    first: Eigensystem
    second: Eigensystem
    left: np.ndarray
    right: np.ndarray
    t0: float = 0.0

    def state(self, t: float) -> np.ndarray:
        tau = float(t) - self.t0
        if tau == 0.0:
            return np.outer(self.left, self.right)
        return np.outer(evolve_one(self.first, self.left, tau),
                        evolve_one(self.second, self.right, tau))


def collapse_to_product(psi: np.ndarray, particle: int, cell: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """`collapse` as its two factors (particle 1's state, particle 2's state): the
    measured particle sits in `cell`, the other keeps its conditional state."""
    measured = np.zeros(psi.shape[0], dtype=psi.dtype)
    measured[cell] = 1.0
    other = psi[cell, :] if particle == 1 else psi[:, cell]
    norm = np.linalg.norm(other)
    if not norm > 0:
        raise ValueError("cannot collapse onto a cell of zero amplitude")
    if particle == 1:
        return measured, other / norm
    if particle == 2:
        return other / norm, measured
    raise ValueError("particle must be 1 or 2")


# ---- the (generalised) Born rule and measurement ------------------------------------
def joint_density(psi: np.ndarray, born_power: float = 2.0) -> np.ndarray:
    """Cell probabilities |Psi|^p / sum |Psi|^p (p = 2 is the Born rule)."""
    magnitude = np.abs(psi)
    density = magnitude * magnitude if born_power == 2.0 else magnitude**born_power
    return density / density.sum()


def marginal(psi: np.ndarray, particle: int, born_power: float = 2.0) -> np.ndarray:
    """Cell probabilities of one particle (1 or 2) under the generalised Born rule
    (length n^2)."""
    density = joint_density(psi, born_power)
    if particle == 1:
        return density.sum(axis=1)
    if particle == 2:
        return density.sum(axis=0)
    raise ValueError("particle must be 1 or 2")


def region_probability(psi: np.ndarray, particle: int, weights: np.ndarray,
                       born_power: float = 2.0) -> float:
    """Probability that `particle` lies in a region given by per-cell area fractions
    (QuantumGrid.region_weights)."""
    return float(np.dot(marginal(psi, particle, born_power), weights))


def collapse(psi: np.ndarray, particle: int, cell: int) -> np.ndarray:
    """Project the joint state onto `particle` being in grid cell `cell` and renormalise
    (in the L2 sense, whatever the Born power: p changes the outcome probabilities, not
    the wave function the dynamics carries). The other particle keeps its conditional
    state Psi(cell, .) (or Psi(., cell))."""
    out = np.zeros_like(psi)
    if particle == 1:
        out[cell, :] = psi[cell, :]
    elif particle == 2:
        out[:, cell] = psi[:, cell]
    else:
        raise ValueError("particle must be 1 or 2")
    norm = np.linalg.norm(out)
    if not norm > 0:
        raise ValueError("cannot collapse onto a cell of zero amplitude")
    return out / norm


def sample_cell(psi: np.ndarray, particle: int, rng: np.random.Generator,
                born_power: float = 2.0) -> int:
    """Draw the cell of `particle` from its marginal under the generalised Born rule."""
    probabilities = marginal(psi, particle, born_power)
    return int(rng.choice(probabilities.size, p=probabilities))


def evolve_one(system: Eigensystem, psi: np.ndarray, t: float) -> np.ndarray:
    """One particle's state exp(-i H t) psi (length n^2)."""
    return system.vectors @ (np.exp(-1j * system.energies * float(t)) * (system.vectors.T @ psi))


def product_forecast(systems: tuple[Eigensystem, Eigensystem],
                     packets: tuple[np.ndarray, np.ndarray], born_power: float,
                     grid: QuantumGrid, queries: Sequence[dict]) -> np.ndarray:
    """Region probabilities at the queries (dicts with "t", "particle", "region") for the
    product state psi1(r1) psi2(r2) under the outcome rule |Psi|^p. The joint density
    |psi1|^p |psi2|^p factorises, so a particle's marginal is |psi_k(t)|^p normalised:
    one-particle evolutions instead of the joint one."""
    out = []
    for q in queries:
        k = int(q["particle"]) - 1
        magnitude = np.abs(evolve_one(systems[k], packets[k], q["t"]))
        density = magnitude**born_power
        out.append(float(density @ grid.region_weights(*q["region"]) / density.sum()))
    return np.array(out)


def joint_forecast(systems: tuple[Eigensystem, Eigensystem], psi0: np.ndarray,
                   born_power: float, grid: QuantumGrid, queries: Sequence[dict]) -> np.ndarray:
    """Region probabilities at the queries for the joint initial state psi0, evolved
    exactly, under the outcome rule |Psi|^p."""
    propagator = Propagator.from_state(systems[0], systems[1], psi0)
    states: dict[float, np.ndarray] = {}
    out = []
    for q in queries:
        t = float(q["t"])
        if t not in states:
            states[t] = propagator.state(t)
        out.append(region_probability(states[t], int(q["particle"]),
                                      grid.region_weights(*q["region"]), born_power))
    return np.array(out)


# ---- split-operator reference (tests and bench) -------------------------------------
def split_operator_evolve(psi0: np.ndarray, grid: QuantumGrid, masses: tuple[float, float],
                          potentials: tuple[np.ndarray, np.ndarray], t_end: float,
                          dt: float = 0.005) -> np.ndarray:
    """Strang splitting exp(-iV dt/2) exp(-iT dt) exp(-iV dt/2) of the joint state on the
    32^4 grid, with T the dispersion relation of the same 5-point stencil (so it solves
    the same discrete Hamiltonian as the exact propagator). JAX, complex128."""
    import jax
    import jax.numpy as jnp

    n = grid.n
    steps = max(1, round(t_end / dt))
    dt = t_end / steps
    with jax.enable_x64(True):
        half_v = np.exp(-0.5j * dt * (potentials[0][:, None] + potentials[1][None, :]))
        half_v = jnp.asarray(half_v.reshape(n, n, n, n))
        t1 = kinetic_symbol(grid, masses[0])
        t2 = kinetic_symbol(grid, masses[1])
        kinetic = jnp.asarray(np.exp(-1j * dt * (t1[:, :, None, None] + t2[None, None, :, :])))

        @jax.jit
        def run(state, half_v, kinetic, steps):
            def body(_, s):
                s = half_v * s
                s = jnp.fft.ifftn(kinetic * jnp.fft.fftn(s, axes=(0, 1, 2, 3)), axes=(0, 1, 2, 3))
                return half_v * s
            return jax.lax.fori_loop(0, steps, body, state)

        out = run(jnp.asarray(psi0.reshape(n, n, n, n), dtype=jnp.complex128), half_v, kinetic,
                  steps)
        return np.asarray(out).reshape(n * n, n * n)
