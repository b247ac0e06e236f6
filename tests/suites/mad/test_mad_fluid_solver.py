"""The fluid world's Navier-Stokes solver against independent references: the analytic
Taylor-Green decay, round-off incompressibility, the alien force computed a second way
(curl of C u_perp by spectral differentiation of its components), a fixed-step RK4
with complex FFTs and explicit viscosity, exact Fourier-series evaluation, and
convergence under grid refinement. Small grids keep it fast."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from discoverygym.physics import fluid_solver as fs

NU = 1e-3


def field(omega_hat: np.ndarray) -> np.ndarray:
    n = omega_hat.shape[0]
    return np.fft.irfft2(omega_hat, s=(n, n))


@pytest.mark.parametrize("k", [1, 3])
def test_taylor_green_decays_at_the_analytic_viscous_rate(k):
    nu = 0.02  # large enough that the decay is measurable in a short run
    omega0 = fs.taylor_green(32, k)
    times = [0.0, 0.7, 2.0]
    solution = fs.simulate(omega0, times, nu=nu)
    for t, w_hat in zip(times, solution.omega_hat, strict=True):
        expected = omega0 * math.exp(-2.0 * nu * k * k * t)
        assert np.max(np.abs(field(w_hat) - expected)) < 1e-12 * np.max(np.abs(omega0))


def test_taylor_green_at_the_world_viscosity_over_a_long_run():
    # Taylor-Green is an unstable steady state of the Euler terms: round-off grows
    # slowly over a long run, so the tolerance is looser than for the short runs.
    omega0 = fs.taylor_green(24, 2)
    solution = fs.simulate(omega0, [30.0], nu=NU)
    expected = omega0 * math.exp(-2.0 * NU * 4 * 30.0)
    assert np.max(np.abs(field(solution.omega_hat[-1]) - expected)) < 1e-6


@pytest.fixture(scope="module")
def shear_run() -> fs.Solution:
    omega0 = fs.double_shear_layer(48, thickness=0.15, amplitude=0.3)
    return fs.simulate(omega0, [0.0, 2.0, 5.0], nu=NU)


def test_velocity_is_divergence_free_to_round_off(shear_run):
    for w_hat in shear_run.omega_hat:
        u, v = fs.velocity_field(w_hat)
        divergence = fs.spectral_divergence(u, v)
        assert np.max(np.abs(divergence)) < 1e-12 * np.max(np.abs(u))
        # and the velocity reproduces the vorticity: dv/dx - du/dy = omega
        n = u.shape[0]
        kx, ky = fs.SpectralGrid(n).wavenumbers()
        curl = np.fft.irfft2(1j * kx * np.fft.rfft2(v) - 1j * ky * np.fft.rfft2(u), s=(n, n))
        assert np.max(np.abs(curl - field(w_hat))) < 1e-11 * np.max(np.abs(field(w_hat)))


def test_shear_layer_rolls_up(shear_run):
    # the perturbation grows: the flow at t = 5 is far from the initial state
    w0, w5 = field(shear_run.omega_hat[0]), field(shear_run.omega_hat[-1])
    assert np.linalg.norm(w5 - w0) > 0.2 * np.linalg.norm(w0)
    assert np.all(np.isfinite(w5))


@pytest.mark.parametrize("law", [fs.VelocityModulation(gamma=0.0),
                                 fs.VorticityModulation(gamma=0.0),
                                 fs.CombinedModulation(fs.VelocityModulation(0.0),
                                                       fs.VorticityModulation(0.0))])
def test_alien_force_vanishes_with_gamma_zero(law):
    omega0 = fs.double_shear_layer(32, thickness=0.2, amplitude=0.4)
    normal = fs.simulate(omega0, [1.5], nu=NU)
    altered = fs.simulate(omega0, [1.5], nu=NU, modulation=law)
    assert np.max(np.abs(altered.omega_hat - normal.omega_hat)) < 1e-12 * np.max(
        np.abs(normal.omega_hat))


@pytest.mark.parametrize("law", [fs.VelocityModulation(gamma=0.7),
                                 fs.VorticityModulation(gamma=10.0),
                                 fs.CombinedModulation(fs.VelocityModulation(0.5),
                                                       fs.VorticityModulation(5.0))])
def test_alien_force_curl_matches_a_direct_computation(law):
    # Independent route: f = C (v, -u) on the grid, curl f = d f_y/dx - d f_x/dy, with
    # every derivative spectral, dealiased the same way.
    n = 32
    omega = fs.double_shear_layer(n, thickness=0.2, amplitude=0.4)
    grid = fs.SpectralGrid(n)
    mask = grid.dealias_mask()
    w_hat = np.where(mask, np.fft.rfft2(omega), 0.0)
    w_hat[0, 0] = 0.0
    u, v = fs.velocity_field(w_hat)
    w = field(w_hat)
    with jax.enable_x64(True):
        c = np.asarray(law(u, v, w))
    fx, fy = c * v, -c * u
    kx, ky = grid.wavenumbers()
    curl_hat = 1j * kx * np.fft.rfft2(fy) - 1j * ky * np.fft.rfft2(fx)
    wx = np.fft.irfft2(1j * kx * w_hat, s=(n, n))
    wy = np.fft.irfft2(1j * ky * w_hat, s=(n, n))
    expected = np.where(mask, -np.fft.rfft2(u * wx + v * wy) + curl_hat, 0.0)
    with jax.enable_x64(True):
        ops = fs._operators(n)
        got = np.asarray(fs.nonlinear_term(jax.numpy.asarray(w_hat), ops, law))
    assert np.max(np.abs(got - expected)) < 1e-10 * np.max(np.abs(expected))
    # and the force is not negligible: the altered law really changes the dynamics
    assert np.max(np.abs(np.where(mask, curl_hat, 0.0))) > 0.05 * np.max(np.abs(expected))


def test_force_does_no_work():
    # f . u = C (v u - u v) = 0 pointwise
    u = np.random.default_rng(0).normal(size=(8, 8))
    v = np.random.default_rng(1).normal(size=(8, 8))
    with jax.enable_x64(True):
        c = np.asarray(fs.VelocityModulation(0.7)(u, v, u))
    assert np.max(np.abs(c * v * u + (-c * u) * v)) < 1e-15


@pytest.mark.parametrize("law", [None, fs.VorticityModulation(gamma=10.0)])
def test_agrees_with_fixed_step_rk4_with_complex_ffts(law):
    omega0 = fs.double_shear_layer(32, thickness=0.2, amplitude=0.4)
    reference = fs.reference_simulate(omega0, 2.0, nu=NU, dt=2e-3, modulation=law)
    scale = np.max(np.abs(reference))
    # at the default CFL number the step error is ~1e-5 of the field on this coarse grid
    # (the world's finer grids take proportionally smaller steps) ...
    ours = field(fs.simulate(omega0, [2.0], nu=NU, modulation=law).omega_hat[-1])
    coarse_error = np.max(np.abs(ours - reference))
    assert coarse_error < 5e-4 * scale
    # ... and it falls as dt^4 with the CFL number: fourth order, same equation
    fine = field(fs.simulate(omega0, [2.0], nu=NU, modulation=law, cfl=0.1).omega_hat[-1])
    assert np.max(np.abs(fine - reference)) < min(5e-7 * scale, 0.02 * coarse_error)


def test_output_times_are_hit_exactly_whatever_the_chunking():
    omega0 = fs.double_shear_layer(32, thickness=0.2, amplitude=0.4)
    direct = fs.simulate(omega0, [3.0], nu=NU).omega_hat[-1]
    chunked = fs.simulate(omega0, [0.4, 1.1, 1.7, 3.0], nu=NU).omega_hat[-1]
    # the step is re-chosen per chunk, so the two differ by the scheme's time-step error
    assert np.max(np.abs(direct - chunked)) < 1e-5 * np.max(np.abs(direct))
    assert np.allclose(fs.simulate(omega0, [0.4, 1.1, 1.7, 3.0], nu=NU).times,
                       [0.4, 1.1, 1.7, 3.0])


def test_point_evaluation_is_the_exact_fourier_series():
    n = 32
    x, y = fs.SpectralGrid(n).coordinates()
    omega = np.sin(3 * x) * np.cos(2 * y) + 0.5 * np.cos(x + 4 * y) - 0.2 * np.sin(7 * y)
    w_hat = np.fft.rfft2(omega)
    rng = np.random.default_rng(3)
    px, py = rng.uniform(0, 2 * np.pi, 50), rng.uniform(0, 2 * np.pi, 50)
    exact = np.sin(3 * px) * np.cos(2 * py) + 0.5 * np.cos(px + 4 * py) - 0.2 * np.sin(7 * py)
    assert np.max(np.abs(fs.evaluate_at_points(w_hat, px, py) - exact)) < 1e-12
    # on grid points it returns the grid values of any dealiased field
    shear = fs.double_shear_layer(n, 0.3, 0.3)
    s_hat = np.where(fs.SpectralGrid(n).dealias_mask(), np.fft.rfft2(shear), 0.0)
    on_grid = fs.evaluate_at_points(s_hat, x[::5, ::3], y[::5, ::3])
    assert np.allclose(on_grid, field(s_hat)[::5, ::3].ravel(), atol=1e-12)


def test_solution_converges_as_resolution_rises():
    # Thick layer, short time (t = 1): a flow the finest grid resolves; the error of each
    # coarser grid against it (at 24 sample points, by exact Fourier evaluation) falls.
    rng = np.random.default_rng(11)
    px, py = rng.uniform(0, 2 * np.pi, 24), rng.uniform(0, 2 * np.pi, 24)
    values = {}
    for n in (24, 48, 96):
        solution = fs.simulate(fs.double_shear_layer(n, 0.3, 0.3), [1.0], nu=NU)
        values[n] = fs.evaluate_at_points(solution.omega_hat[-1], px, py)
    scale = np.linalg.norm(values[96])
    error_24 = np.linalg.norm(values[24] - values[96]) / scale
    error_48 = np.linalg.norm(values[48] - values[96]) / scale
    # measured: 0.10 and 0.0066
    assert error_48 < 0.1 * error_24
    assert error_48 < 0.02


@pytest.mark.parametrize("law", [fs.VelocityModulation(gamma=0.7),
                                 fs.VorticityModulation(gamma=5.0),
                                 fs.CombinedModulation(fs.VelocityModulation(gamma=0.5),
                                                       fs.VorticityModulation(gamma=5.0))])
def test_a_law_through_the_shared_kernel_gives_its_own_kernels_bits(law):
    """The velocity and vorticity laws run through one compiled kernel with their
    strengths as arguments (issue #37: one XLA compile per process instead of one per
    law); the same steps through the law's own kernel (a wrapper the shared kernel does
    not recognise) give the same bits. The combined law keeps its own kernel."""
    def own_kernel(u, v, omega):
        return law(u, v, omega)

    shared = fs.mixture_params(law) is not None
    assert shared == (not isinstance(law, fs.CombinedModulation))
    assert fs.mixture_params(own_kernel) is None
    start = fs.initial_hat(fs.double_shear_layer(32, 0.1, 0.05, 0.4))
    through_shared = fs.fixed_step_advance(start, 0.02, 15, nu=NU, modulation=law)
    through_own = fs.fixed_step_advance(start, 0.02, 15, nu=NU, modulation=own_kernel)
    assert np.array_equal(through_shared, through_own)
    assert not np.array_equal(through_own, fs.fixed_step_advance(start, 0.02, 15, nu=NU))
