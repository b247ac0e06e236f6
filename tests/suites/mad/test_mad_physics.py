"""Classical-world physics against independent references: conservation laws, analytic
collisions, direct NumPy evaluation of the force laws, and a NumPy re-implementation of
the anisotropic-inertia integrator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from discoverygym.suites.mad import classical_physics as P
from discoverygym.suites.mad import constants as C

EPS = C.SOFTENING


_INTEGRATORS: dict[tuple[int, int, float], P.Integrator] = {}


def run(law: P.Law, x, v, mass, radius, n_steps: int, dt: float = C.DT, chunk: int = 1000,
        s=None) -> P.State:
    """Integrate with one compiled Integrator per (law object, chunk, dt)."""
    key = (id(law), chunk, dt)
    if key not in _INTEGRATORS:
        _INTEGRATORS[key] = P.Integrator(law, chunk, dt)
    integrator = _INTEGRATORS[key]
    with P.x64():
        out = integrator.advance(P.as_state(np.asarray(x, float), np.asarray(v, float), s),
                                 P.as_bodies(np.asarray(mass, float), np.asarray(radius, float)),
                                 n_steps)
        return P.State(*(np.asarray(a) for a in out))


def energy(x, v, mass) -> float:
    kinetic = 0.5 * np.sum(mass[:, None] * v**2)
    potential = 0.0
    for i in range(len(mass)):
        for j in range(i + 1, len(mass)):
            r = math.sqrt(np.sum((x[i] - x[j]) ** 2) + EPS**2)
            potential -= C.G * mass[i] * mass[j] / r
    return kinetic + potential


def bound_pair():
    """Two bodies on an eccentric bound orbit about their centre of mass, far from walls,
    with radii small enough never to touch, plus a light third body further out."""
    mass = np.array([3.0, 1.0, 0.5])
    x = np.array([[-0.5, 0.0, 0.0], [1.5, 0.0, 0.0], [0.0, 5.0, 1.0]])
    v = np.array([[0.0, -0.25, 0.0], [0.0, 0.75, 0.05], [0.3, 0.0, 0.0]])
    radius = np.full(3, 1e-3)
    return x, v, mass, radius


NORMAL = P.build_law("normal")
KAPPA0 = P.build_law("kappa=0")
KAPPA10 = P.build_law("kappa10")
FREE = P.Law("free", "no force", P.newton_force(g=0.0), P.standard_inertia())


def trajectory_energy_error(dt: float, t_end: float = 6.0) -> tuple[float, float]:
    x, v, mass, radius = bound_pair()
    law = NORMAL
    e0 = energy(x, v, mass)
    worst, momentum_drift = 0.0, 0.0
    p0 = np.sum(mass[:, None] * v, axis=0)
    state_x, state_v = x, v
    for _ in range(12):  # sample the energy along the way, not only at the end
        out = run(law, state_x, state_v, mass, radius, int(round(t_end / 12 / dt)), dt=dt)
        state_x, state_v = out.x, out.v
        worst = max(worst, abs(energy(out.x, out.v, mass) - e0) / abs(e0))
        momentum_drift = max(momentum_drift,
                             np.max(np.abs(np.sum(mass[:, None] * out.v, axis=0) - p0)))
    return worst, momentum_drift


def test_energy_and_momentum_conserved_and_energy_error_shrinks_with_dt():
    coarse, p_coarse = trajectory_energy_error(2e-3)
    fine, p_fine = trajectory_energy_error(1e-3)
    # Semi-implicit Euler is symplectic: bounded energy error of order dt.
    assert fine < 1e-2
    assert fine < 0.7 * coarse  # first order: halving dt roughly halves the error
    # Pair forces are equal and opposite: momentum is conserved to rounding.
    assert p_coarse < 1e-11 and p_fine < 1e-11


def no_gravity() -> P.Law:
    return FREE


def test_head_on_collision_matches_analytic_elastic_result():
    m1, m2 = 2.0, 0.7
    u1, u2 = 0.8, -0.3
    x = np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    v = np.array([[u1, 0.0, 0.0], [u2, 0.0, 0.0]])
    out = run(no_gravity(), x, v, np.array([m1, m2]), np.array([0.4, 0.3]), 3000)
    expect1 = ((m1 - m2) * u1 + 2 * m2 * u2) / (m1 + m2)
    expect2 = ((m2 - m1) * u2 + 2 * m1 * u1) / (m1 + m2)
    np.testing.assert_allclose(out.v[:, 0], [expect1, expect2], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.v[:, 1:], 0.0, atol=1e-15)


def test_oblique_collision_matches_analytic_result(dt=C.DT):
    m1, m2 = 1.5, 3.0
    r1, r2 = 0.3, 0.4
    impact = 0.35  # impact parameter < r1 + r2
    x = np.array([[-3.0, impact, 0.0], [0.0, 0.0, 0.0]])
    v = np.array([[1.2, 0.0, 0.0], [0.0, 0.0, 0.0]])
    out = run(no_gravity(), x, v, np.array([m1, m2]), np.array([r1, r2]), int(round(4.0 / dt)),
              dt=dt)
    # Analytic: contact when |x1(t) - x2| = r1 + r2; normal along the line of centres.
    reach = math.sqrt((r1 + r2) ** 2 - impact**2)
    contact = np.array([-reach, impact, 0.0])
    normal = -contact / np.linalg.norm(contact)  # from sphere 1 to sphere 2
    rel = np.dot(v[0] - v[1], normal)
    expect1 = v[0] - 2 * m2 / (m1 + m2) * rel * normal
    expect2 = v[1] + 2 * m1 / (m1 + m2) * rel * normal
    # Contact is detected within one step of penetration: error of order v dt / r.
    tol = 20 * 1.2 * dt / (r1 + r2)
    np.testing.assert_allclose(out.v[0], expect1, atol=tol)
    np.testing.assert_allclose(out.v[1], expect2, atol=tol)
    # Whatever the discretisation, the impulse conserves momentum and energy exactly.
    mass = np.array([m1, m2])
    np.testing.assert_allclose(np.sum(mass[:, None] * out.v, 0), m1 * v[0], atol=1e-13)
    ke = 0.5 * np.sum(mass[:, None] * out.v**2)
    assert ke == pytest.approx(0.5 * m1 * np.sum(v[0] ** 2), rel=1e-13)


def test_wall_bounce_reverses_normal_component_only():
    x = np.array([[9.0, 2.0, -1.0], [-5.0, -5.0, -5.0]])  # the second one stays clear
    v = np.array([[1.0, 0.5, -0.25], [0.0, 0.0, 0.0]])
    out = run(no_gravity(), x, v, np.array([1.0, 1.0]), np.array([0.3, 0.3]), 2000)
    np.testing.assert_allclose(out.v[0], [-1.0, 0.5, -0.25], rtol=0, atol=0)
    # it turned around at x = 10 - r (within one step) and moved back
    assert out.x[0, 0] == pytest.approx(9.7 - (2.0 - 0.7), abs=3e-3)
    assert np.all(np.abs(out.x) <= C.BOX_HALF_WIDTH)


def numpy_forces(x, mass, magnitude) -> np.ndarray:
    n = len(mass)
    forces = np.zeros_like(x)
    for i in range(n):
        for j in range(n):
            if i != j:
                sep = x[j] - x[i]
                r = math.sqrt(sep @ sep + EPS**2)
                forces[i] += magnitude(r) * mass[i] * mass[j] * sep / r
    return forces


@pytest.mark.parametrize("law_name,magnitude", [
    ("inv-r", lambda r: C.G / r),
    ("ripple", lambda r: C.G / r**2 * (1 + math.sin(2 * math.pi * r / 10.0))),
    ("normal", lambda r: C.G / r**2),
])
def test_force_laws_match_direct_numpy_evaluation(law_name, magnitude):
    rng = np.random.default_rng(7)
    x = rng.uniform(-9, 9, size=(6, 3))
    mass = rng.uniform(0.5, 5, size=6)
    law = P.build_law(law_name)
    with P.x64():
        got = np.asarray(P.pair_forces(P.as_state(x, x).x, P.as_bodies(mass, mass).mass,
                                       law.force_law))
    np.testing.assert_allclose(got, numpy_forces(x, mass, magnitude), rtol=1e-12, atol=1e-14)


def crowded_state(dim: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.5, 2.5, size=(3, dim))
    v = rng.normal(size=(3, dim))
    mass = rng.uniform(0.5, 5, size=3)
    radius = rng.uniform(0.2, 0.4, size=3)
    return x, v, mass, radius


@pytest.mark.parametrize("dim", [2, 3])
def test_kappa_zero_reduces_exactly_to_normal(dim):
    x, v, mass, radius = crowded_state(dim)
    # The inertia models agree bit for bit: with kappa = 0, M = m I and the adjugate
    # solve returns F / m exactly, whatever S holds.
    rng = np.random.default_rng(5)
    force = rng.normal(size=(3, dim))
    s = rng.normal(size=(3, dim, dim))
    with P.x64():
        standard, _ = P.standard_inertia()(*map(P.jnp.asarray, (force, mass, s)))
        aniso, _ = P.anisotropic_inertia(0.0)(*map(P.jnp.asarray, (force, mass, s)))
    assert np.array_equal(np.asarray(standard), np.asarray(aniso))
    # Whole trajectories (with collisions) agree to rounding: XLA may fuse the two
    # compiled steps differently, so the last bits of a sum can differ.
    normal = run(NORMAL, x, v, mass, radius, 4000)
    kappa0 = run(KAPPA0, x, v, mass, radius, 4000)
    np.testing.assert_allclose(kappa0.x, normal.x, rtol=0, atol=1e-11)
    np.testing.assert_allclose(kappa0.v, normal.v, rtol=0, atol=1e-10)
    # ... while a non-zero kappa changes the motion
    kappa10 = run(KAPPA10, x, v, mass, radius, 4000)
    assert np.max(np.abs(kappa10.x - normal.x)) > 1e-4


def numpy_anisotropic(x, v, mass, kappa, decay, n_steps, dt=C.DT):
    """Reference: semi-implicit Euler with a = (m I + kappa S)^-1 F by np.linalg.solve and
    dS/dt = -lambda S + a a^T (no collisions)."""
    n, d = x.shape
    s = np.zeros((n, d, d))
    x, v = x.copy(), v.copy()
    magnitude = lambda r: C.G / r**2  # noqa: E731
    for _ in range(n_steps):
        force = numpy_forces(x, mass, magnitude)
        acc = np.stack([np.linalg.solve(mass[i] * np.eye(d) + kappa * s[i], force[i])
                        for i in range(n)])
        v = v + dt * acc
        x = x + dt * v
        s = s + dt * (-decay * s + acc[:, :, None] * acc[:, None, :])
    return x, v, s


@pytest.mark.parametrize("dim,kappa,decay", [(2, 20.0, 1.0), (3, 10.0, 0.3)])
def test_anisotropic_inertia_matches_numpy_reference(dim, kappa, decay):
    # A triangle of bodies, close enough for strong accelerations, never touching.
    x = np.array([[-1.5, 0.0, 0.2], [1.5, 0.5, 0.0], [0.0, 2.0, -0.3]])[:, :dim]
    v = np.array([[0.1, -0.3, 0.0], [-0.2, 0.3, 0.1], [0.3, 0.0, -0.1]])[:, :dim]
    mass = np.array([4.0, 2.5, 1.0])
    radius = np.full(3, 1e-3)  # no contacts in this short run
    law = P.Law("aniso", "", P.newton_force(), P.anisotropic_inertia(kappa, decay), kappa)
    got = run(law, x, v, mass, radius, 600)
    ref_x, ref_v, ref_s = numpy_anisotropic(x, v, mass, kappa, decay, 600)
    assert np.max(np.abs(ref_s)) > 1e-3  # S grew enough to matter
    np.testing.assert_allclose(got.x, ref_x, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got.v, ref_v, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got.s, ref_s, rtol=1e-9, atol=1e-12)
    # and the anisotropy did change the motion relative to standard inertia
    standard = run(NORMAL, x, v, mass, radius, 600)
    assert np.max(np.abs(standard.v - got.v)) > 1e-6


def test_chunked_scan_and_single_steps_give_the_same_state():
    x, v, mass, radius = crowded_state(3)
    law = P.build_law("ripple")
    assert np.min(np.linalg.norm(x[:, None] - x[None], axis=-1) + 9 * np.eye(3)) < 3
    chunked = run(law, x, v, mass, radius, 2500, chunk=1000)  # 2 scans + 500 steps
    stepwise = run(law, x, v, mass, radius, 2500, chunk=10**6)  # 2500 single steps
    np.testing.assert_allclose(chunked.x, stepwise.x, rtol=1e-13, atol=1e-13)
