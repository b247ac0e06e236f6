"""Independent checks of every shipped tpbench reference answer: each reference is
compared with a second method (numerical integration, ODE solving, linear algebra,
simulation or a symbolic derivation) at several argument sets, never with itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, linalg, optimize

from discoverygym.suites.tpbench.problem import builtin_problem_dir, load_problems

PROBLEMS = {p.id: p for p in load_problems(builtin_problem_dir())}
CHECKED: set[str] = set()


def reference(problem_id: str):
    """The reference function of a shipped problem (our own code, run on the host)."""
    problem = PROBLEMS[problem_id]
    namespace: dict = {}
    exec(compile(problem.reference, problem.id, "exec"), namespace)  # noqa: S102
    CHECKED.add(problem_id)
    return namespace[problem.function]


# ---- classical mechanics ----------------------------------------------------------------
def test_well_position_spread_by_quadrature():
    f = reference("well-position-spread")
    for n, L, x0 in [(1, 1.0, 0.5), (4, 2.5, -1.0), (9, 0.3, 2.0)]:
        val, _ = integrate.quad(lambda x: 2 / L * math.sin(n * math.pi * x / L) ** 2
                                * (x - x0) ** 2, 0, L, limit=200)
        assert f(n, L, x0) == pytest.approx(val, rel=1e-9)


def test_bead_hoop_minimises_effective_potential():
    f = reference("bead-hoop-equilibrium")
    for R, w, g in [(1.0, 1.0, 9.81), (1.0, 5.0, 9.81), (0.3, 12.0, 3.0), (2.0, 2.0, 9.0)]:
        def U(t):
            return -g * R * math.cos(t) - 0.5 * w**2 * R**2 * math.sin(t) ** 2
        grid = np.linspace(0, math.pi, 20001)
        t_min = grid[np.argmin([U(t) for t in grid])]
        res = optimize.minimize_scalar(U, bounds=(max(t_min - 1e-3, 0), min(t_min + 1e-3, math.pi)),
                                       method="bounded", options={"xatol": 1e-12})
        assert f(R, w, g) == pytest.approx(res.x, abs=1e-5)


def _measure_period(rhs, y0, t_max):
    """Period from successive upward zero crossings of y[0]."""
    ev = lambda t, y: y[0]  # noqa: E731
    ev.direction = 1
    sol = integrate.solve_ivp(rhs, (0, t_max), y0, events=ev, rtol=1e-11, atol=1e-13)
    crossings = sol.t_events[0]
    return float(np.mean(np.diff(crossings)))


def test_rod_bead_pendulum_by_ode():
    f = reference("rod-bead-pendulum")
    for M, m, ell, d, g in [(1.0, 0.0, 1.0, 0.5, 9.81), (1.0, 0.5, 1.0, 0.0, 9.81),
                            (2.0, 0.7, 1.5, 0.2, 3.0)]:
        arm = d + ell / 2
        # build the equation of motion from the mass distribution (rod as 400 points)
        s = (np.arange(400) + 0.5) / 400 * ell - ell / 2 - d  # positions below the axle (neg = above)
        masses = np.full(400, M / 400)
        pos = np.append(-s, arm) if m > 0 else -s
        mass = np.append(masses, m) if m > 0 else masses
        inertia = float(np.sum(mass * pos**2))
        torque_coef = float(np.sum(mass * pos)) * g
        T = _measure_period(lambda t, y: [y[1], -torque_coef / inertia * math.sin(y[0])],
                            [0.0, 1e-4], 6 * 2 * math.pi * math.sqrt(inertia / torque_coef))
        assert f(M, m, ell, d, g) == pytest.approx(T, rel=2e-5)


def test_apsidal_angle_by_orbit_integration():
    f = reference("apsidal-angle-perturbed-kepler")
    for m, k, beta, ell in [(1.0, 1.0, 0.3, 1.0), (2.0, 1.5, -0.5, 2.0), (0.5, 3.0, 1.0, 1.2)]:
        # start at periapsis of an eccentric bound orbit and find the next periapsis
        gamma2 = 1 + 2 * m * beta / ell**2
        u0 = m * k / (gamma2 * ell**2) * 1.4  # periapsis of an eccentric bound orbit
        # integrate Newton's equations in time (not the Binet equation of the solution)
        r0 = 1 / u0
        def eom(t, y):
            r, vr, phi = y
            force = -k / r**2 + 2 * beta / r**3
            return [vr, ell**2 / (m**2 * r**3) + force / m, ell / (m * r**2)]
        ev2 = lambda t, y: y[1]  # noqa: E731
        ev2.direction = 1
        sol = integrate.solve_ivp(eom, (0, 60), [r0, 0.0, 0.0], events=[ev2], rtol=1e-10,
                                  atol=1e-12)
        peri_phis = [y[2] for y in sol.y_events[0] if y[2] > 0.1]
        assert peri_phis, "no periapsis found"
        assert f(m, k, beta, ell) == pytest.approx(peri_phis[0], rel=1e-6)


def test_three_spring_modes_by_eigh():
    f = reference("three-spring-normal-modes")
    for m1, m2, k1, k2, k3 in [(1, 1, 1, 1, 1), (1, 3, 0, 2, 0), (2, 0.5, 10, 0.5, 0), (0.3, 4, 7, 3, 20)]:
        K = np.array([[k1 + k2, -k2], [-k2, k2 + k3]], float)
        w2 = linalg.eigh(K, np.diag([m1, m2]), eigvals_only=True)
        got = f(m1, m2, k1, k2, k3)
        assert got == pytest.approx(tuple(np.sqrt(np.clip(w2, 0, None))), rel=1e-9, abs=1e-6)


def test_kapitza_by_floquet_analysis():
    f = reference("kapitza-inverted-pendulum")
    for a, W, ell, g in [(0.02, 400.0, 1.0, 9.81), (0.01, 1500.0, 0.5, 9.81), (0.004, 2000.0, 0.3, 3.0)]:
        # linearised about theta = pi: phi'' = (g - a W^2 cos W t)/ell * phi
        def rhs(t, y):
            return [y[1], (g - a * W**2 * math.cos(W * t)) / ell * y[0]]
        period = 2 * math.pi / W
        cols = [integrate.solve_ivp(rhs, (0, period), y0, rtol=1e-12, atol=1e-14).y[:, -1]
                for y0 in ([1.0, 0.0], [0.0, 1.0])]
        monodromy = np.array(cols).T
        half_trace = np.trace(monodromy) / 2
        if abs(half_trace) <= 1:
            w_eff2 = (math.acos(half_trace) / period) ** 2
        else:
            w_eff2 = -(math.acosh(abs(half_trace)) / period) ** 2
        assert f(a, W, ell, g) == pytest.approx(w_eff2, rel=0.03)


def test_atwood_by_energy_conservation():
    f = reference("atwood-disk-pulley")
    for m1, m2, M, g in [(2, 1, 2, 9.81), (1, 1, 3, 9.81), (0.5, 3, 1, 9.81)]:
        h = 1.0  # block 1 descends h: lost potential energy = kinetic energy of all three
        v2 = 2 * (m1 - m2) * g * h / (m1 + m2 + 0.5 * M)  # disk KE = (1/2)(M R^2/2)(v/R)^2
        a_energy = v2 / (2 * h)
        a, T1, T2 = f(m1, m2, M, g)
        assert a == pytest.approx(a_energy, rel=1e-12, abs=1e-12)
        assert m1 * g - T1 == pytest.approx(m1 * a)
        assert T2 - m2 * g == pytest.approx(m2 * a)
        # the pulley's angular acceleration needs net torque (T1 - T2) R = (M R^2 / 2) a / R
        assert T1 - T2 == pytest.approx(0.5 * M * a, abs=1e-12)
