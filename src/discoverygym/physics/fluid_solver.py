"""2D incompressible Navier-Stokes in vorticity form on the periodic square [0, 2 pi]^2.

Pure functions in JAX. Conventions (used everywhere in the fluid world):

- Grids are N x N with x_j = 2 pi j / N; arrays are indexed ``[ix, iy]`` (x along axis 0).
- Fields are held as real-FFT coefficients ``omega_hat = jnp.fft.rfft2(omega)`` of shape
  (N, N // 2 + 1); axis 0 carries k_x = fftfreq, axis 1 carries k_y = rfftfreq.
- Stream function psi with u = d psi / dy, v = -d psi / dx, so omega = dv/dx - du/dy
  = -laplacian(psi) and psi_hat = omega_hat / |k|^2.

The equation is  d omega / dt + u . grad omega = nu laplacian(omega) + curl f,
with an optional "alien" force f = C(u, v, omega) u_perp, u_perp = (v, -u). Because
div u = 0, curl f = -div(C u) = -u . grad C; it does no work on the flow (f . u = 0).

Time stepping: classical RK4 on the nonlinear term with an integrating factor
exp(-nu |k|^2 t) for viscosity (Lawson RK4), 2/3-rule dealiasing of every product,
and a CFL-limited step chosen per output interval outside jit, so that output times
are hit exactly. The right-hand side and the step take the array module as `xp` and
accept a leading batch axis: mad's law score (`suites/mad/law_rollout.py`) runs this
same step with NumPy in the sandbox, with an agent's body force plugged in. A law is a function handed to the integrator: ``modulation(u, v,
omega) -> C`` or ``None`` for the standard equation.

float64: call the simulators inside ``jax.enable_x64(True)`` (``simulate`` does so);
the accuracy tests rely on double precision."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .lazy_import import is_module, lazy_module

# Imported on first use: the sandbox steps agents' laws with NumPy through this module
jax = lazy_module("jax")
jnp = lazy_module("jax.numpy")

Modulation = Callable[["jax.Array", "jax.Array", "jax.Array"], "jax.Array"]
# Any extra body force per unit mass, (u, v, omega) on the grid -> (f_x, f_y): the form an
# agent's `body_force` takes (the benchmark's laws are f = C u_perp, a `Modulation`).
BodyForce = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

DOMAIN_LENGTH = 2.0 * math.pi  # paper: the periodic square [0, 2 pi]^2


# ---- the laws -----------------------------------------------------------------------
@dataclass(frozen=True)
class VelocityModulation:
    """C = gamma sin(beta |u|^2) (paper: gamma in {0.5, 0.7}, beta = 3)."""

    gamma: float
    beta: float = 3.0

    def __call__(self, u: jax.Array, v: jax.Array, omega: jax.Array) -> jax.Array:
        return self.gamma * jnp.sin(self.beta * (u * u + v * v))

    @property
    def transport_factor(self) -> float:
        # curl f = -gamma beta cos(.) u . grad|u|^2: a transport-like term whose speed is
        # of order gamma beta |u| for |u| ~ 1; a heuristic bound, checked by the
        # step-halving tests.
        return 1.0 + self.gamma * self.beta


@dataclass(frozen=True)
class VorticityModulation:
    """C = gamma cos(beta omega) (paper: gamma in {5, 10}, beta = pi / 16)."""

    gamma: float
    beta: float = math.pi / 16.0

    def __call__(self, u: jax.Array, v: jax.Array, omega: jax.Array) -> jax.Array:
        return self.gamma * jnp.cos(self.beta * omega)

    @property
    def transport_factor(self) -> float:
        # curl f = gamma beta sin(beta omega) u . grad omega: vorticity is carried at up to
        # (1 + gamma beta) |u|, so the CFL step shrinks by that factor.
        return 1.0 + self.gamma * self.beta


@dataclass(frozen=True)
class CombinedModulation:
    """C = alpha C_a + (1 - alpha) C_b (paper: alpha = 0.5)."""

    first: VelocityModulation
    second: VorticityModulation
    alpha: float = 0.5

    def __call__(self, u: jax.Array, v: jax.Array, omega: jax.Array) -> jax.Array:
        return self.alpha * self.first(u, v, omega) + (1.0 - self.alpha) * self.second(u, v, omega)

    @property
    def transport_factor(self) -> float:
        return (self.alpha * self.first.transport_factor
                + (1.0 - self.alpha) * self.second.transport_factor)


def transport_factor(modulation: Modulation | None) -> float:
    """How much faster than |u| a law can carry vorticity (1 for the standard law)."""
    return 1.0 if modulation is None else float(getattr(modulation, "transport_factor", 1.0))


# ---- the grid -----------------------------------------------------------------------
@dataclass(frozen=True)
class SpectralGrid:
    """Wavenumbers and the 2/3 dealiasing mask of an N x N periodic grid (real FFT)."""

    n: int

    @property
    def dx(self) -> float:
        return DOMAIN_LENGTH / self.n

    def coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        """Grid point coordinates X, Y (N x N, indexed [ix, iy])."""
        x = np.arange(self.n) * self.dx
        return np.meshgrid(x, x, indexing="ij")

    def wavenumbers(self) -> tuple[np.ndarray, np.ndarray]:
        """Integer wavenumbers k_x (N, 1) and k_y (1, N // 2 + 1)."""
        kx = np.fft.fftfreq(self.n, 1.0 / self.n)[:, None]
        ky = np.fft.rfftfreq(self.n, 1.0 / self.n)[None, :]
        return kx, ky

    def dealias_mask(self) -> np.ndarray:
        """True where a mode survives the 2/3 rule (|k_x|, |k_y| < N / 3)."""
        kx, ky = self.wavenumbers()
        cut = self.n / 3.0
        return (np.abs(kx) < cut) & (np.abs(ky) < cut)


@dataclass(frozen=True)
class _Operators:
    kx: jax.Array
    ky: jax.Array
    k2: jax.Array
    inv_k2: jax.Array
    mask: jax.Array
    n: int


def _operators(n: int, xp=jnp) -> _Operators:
    grid = SpectralGrid(n)
    kx, ky = grid.wavenumbers()
    k2 = kx**2 + ky**2
    inv_k2 = np.where(k2 > 0, 1.0 / np.where(k2 > 0, k2, 1.0), 0.0)
    return _Operators(xp.asarray(kx), xp.asarray(ky), xp.asarray(k2), xp.asarray(inv_k2),
                      xp.asarray(grid.dealias_mask()), n)


def velocity_hat(omega_hat: jax.Array, ops: _Operators) -> tuple[jax.Array, jax.Array]:
    """Real-FFT coefficients of (u, v) from those of the vorticity."""
    psi_hat = omega_hat * ops.inv_k2
    return 1j * ops.ky * psi_hat, -1j * ops.kx * psi_hat


def nonlinear_term(omega_hat: jax.Array, ops: _Operators,
                   modulation: Modulation | None, xp=jnp,
                   body_force: BodyForce | None = None) -> jax.Array:
    """-u . grad omega + curl f, dealiased, in real-FFT coefficients. The law is either a
    `modulation` (f = C u_perp) or any `body_force` (f_x, f_y), or neither."""
    shape = (ops.n, ops.n)
    u_hat, v_hat = velocity_hat(omega_hat, ops)
    u = xp.fft.irfft2(u_hat, s=shape)
    v = xp.fft.irfft2(v_hat, s=shape)
    dwdx = xp.fft.irfft2(1j * ops.kx * omega_hat, s=shape)
    dwdy = xp.fft.irfft2(1j * ops.ky * omega_hat, s=shape)
    term = -xp.fft.rfft2(u * dwdx + v * dwdy)
    if modulation is not None:
        omega = xp.fft.irfft2(omega_hat, s=shape)
        c = modulation(u, v, omega)
        # curl(C u_perp) = -div(C u)
        term = term - 1j * ops.kx * xp.fft.rfft2(c * u) - 1j * ops.ky * xp.fft.rfft2(c * v)
    if body_force is not None:
        omega = xp.fft.irfft2(omega_hat, s=shape)
        fx, fy = body_force(u, v, omega)
        term = term + 1j * ops.kx * xp.fft.rfft2(fy) - 1j * ops.ky * xp.fft.rfft2(fx)
    return xp.where(ops.mask, term, 0.0)


def _lawson_rk4_step(omega_hat: jax.Array, dt: jax.Array, decay_half: jax.Array,
                     ops: _Operators, modulation: Modulation | None, xp=jnp,
                     body_force: BodyForce | None = None) -> jax.Array:
    """One RK4 step of the nonlinear term with the exact viscous integrating factor;
    `decay_half` = exp(-nu k^2 dt / 2)."""
    def rhs(w):
        return nonlinear_term(w, ops, modulation, xp, body_force)

    decay = decay_half * decay_half
    k1 = dt * rhs(omega_hat)
    k2 = dt * rhs(decay_half * (omega_hat + 0.5 * k1))
    k3 = dt * rhs(decay_half * omega_hat + 0.5 * k2)
    k4 = dt * rhs(decay * omega_hat + decay_half * k3)
    return decay * omega_hat + (decay * k1 + 2.0 * decay_half * (k2 + k3) + k4) / 6.0


def fixed_step_advance(omega_hat: np.ndarray, dt: float, n_steps: int, *, nu: float,
                       modulation: Modulation | None = None,
                       body_force: BodyForce | None = None, xp=jnp) -> np.ndarray:
    """`n_steps` Lawson-RK4 steps of a fixed `dt` from real-FFT coefficients (any leading
    batch axes). With `xp` = jax.numpy (call inside `jax.enable_x64`) it is the world's
    jitted kernel; with NumPy it runs the same step eagerly (agent laws in the sandbox)."""
    n = int(omega_hat.shape[-2])
    if is_module(xp, "jax.numpy") and body_force is None:
        with jax.enable_x64(True):
            advance, _ = _compiled(n, float(nu), modulation, True)
            return np.asarray(advance(jnp.asarray(omega_hat, jnp.complex128),
                                      jnp.asarray(dt, jnp.float64), int(n_steps)))
    ops = _operators(n, xp)
    decay_half = xp.exp(-0.5 * nu * ops.k2 * dt)
    w = omega_hat
    for _ in range(int(n_steps)):
        w = _lawson_rk4_step(w, dt, decay_half, ops, modulation, xp, body_force)
    return w


@lru_cache(maxsize=64)
def _compiled(n: int, nu: float, modulation: Modulation | None, x64: bool):
    """Jitted kernels for one (grid, viscosity, law); cached so each compiles once. The
    velocity and vorticity laws share one kernel with their strengths as arguments
    (`law_mixture`): an XLA compile of the step costs about a second, paid once per
    process instead of once per law, and the results are the same to the bit."""
    params = mixture_params(modulation)
    if params is not None:
        advance_mixture = _compiled_family(n, nu, law_mixture)[0]
        p = jnp.asarray(np.asarray(params), dtype=jnp.float64 if x64 else jnp.float32)

        def advance_law(omega_hat, dt, n_steps):
            return advance_mixture(omega_hat, dt, n_steps, p)

        return advance_law, _max_speed(n)
    ops = _operators(n)

    @jax.jit
    def advance(omega_hat, dt, n_steps):
        decay_half = jnp.exp(-0.5 * nu * ops.k2 * dt)
        body = lambda _, w: _lawson_rk4_step(w, dt, decay_half, ops, modulation)  # noqa: E731
        return jax.lax.fori_loop(0, n_steps, body, omega_hat)

    return advance, _max_speed(n)


@lru_cache(maxsize=16)
def _max_speed(n: int):
    """max |u| + |v| on the grid (the CFL speed), jitted; the same for every law."""
    ops = _operators(n)

    @jax.jit
    def max_speed(omega_hat):
        u_hat, v_hat = velocity_hat(omega_hat, ops)
        u = jnp.fft.irfft2(u_hat, s=(n, n))
        v = jnp.fft.irfft2(v_hat, s=(n, n))
        return jnp.max(jnp.abs(u) + jnp.abs(v))

    return max_speed


def law_mixture(params: jax.Array) -> Modulation:
    """C = w1 (gamma1 sin(beta1 |u|^2)) + w2 (gamma2 cos(beta2 omega)), params (w1, gamma1,
    beta1, w2, gamma2, beta2): the velocity and the vorticity laws, each computed as its
    own class computes it (a weight of 1 multiplies exactly, a weight of 0 adds an exact
    0), so both give the same bits as their own kernels."""
    w1, gamma1, beta1, w2, gamma2, beta2 = (params[i] for i in range(6))

    def modulation(u: jax.Array, v: jax.Array, omega: jax.Array) -> jax.Array:
        return (w1 * (gamma1 * jnp.sin(beta1 * (u * u + v * v)))
                + w2 * (gamma2 * jnp.cos(beta2 * omega)))

    return modulation


def mixture_params(modulation: Modulation | None) -> tuple[float, ...] | None:
    """`law_mixture`'s parameters for a benchmark law (None for any other callable)."""
    if type(modulation) is VelocityModulation:
        return (1.0, modulation.gamma, modulation.beta, 0.0, 0.0, 0.0)
    if type(modulation) is VorticityModulation:
        return (0.0, 0.0, 0.0, 1.0, modulation.gamma, modulation.beta)
    # The combined law keeps its own kernel: through the mixture its last bits moved
    # (about 2e-13 after 150 steps), XLA orders its four products differently
    return None


@dataclass(frozen=True)
class Solution:
    """Vorticity at the output times (dealiased real-FFT coefficients) and the step
    statistics."""

    times: np.ndarray  # (T,)
    omega_hat: np.ndarray  # (T, N, N // 2 + 1) complex
    n_steps: int
    min_dt: float


def stable_step(max_speed: float, n: int, cfl: float, factor: float, dt_max: float) -> float:
    """The CFL-limited time step: cfl * dx / (factor * max(|u| + |v|)), capped at dt_max."""
    dx = DOMAIN_LENGTH / n
    speed = factor * max(max_speed, 1e-12)
    return min(dt_max, cfl * dx / speed)


def simulate(omega0: np.ndarray, output_times: Sequence[float], *, nu: float,
             modulation: Modulation | None = None, cfl: float = 0.5, dt_max: float = 0.05,
             x64: bool = True) -> Solution:
    """Integrate from the vorticity field `omega0` (N x N, at t = 0) to each of the
    increasing `output_times` exactly, with an adaptive CFL step chosen per interval.

    Returns the dealiased coefficients at every output time (t = 0 allowed)."""
    return simulate_from(initial_hat(omega0), 0.0, output_times, nu=nu, modulation=modulation,
                         cfl=cfl, dt_max=dt_max, x64=x64)


def initial_hat(omega0: np.ndarray) -> np.ndarray:
    """The dealiased, zero-mean real-FFT coefficients of a grid field (N x N): the state
    `simulate` starts from."""
    n = int(omega0.shape[0])
    mask = SpectralGrid(n).dealias_mask()
    omega_hat = np.where(mask, np.fft.rfft2(np.asarray(omega0, dtype=float)), 0.0)
    omega_hat[0, 0] = 0.0  # periodic vorticity has zero mean
    return omega_hat


def simulate_from(omega_hat: np.ndarray, t_start: float, output_times: Sequence[float], *,
                  nu: float, modulation: Modulation | None = None, cfl: float = 0.5,
                  dt_max: float = 0.05, chunk: float = 0.5, x64: bool = True) -> Solution:
    """As `simulate`, from dealiased real-FFT coefficients `omega_hat` (N x N//2+1) at
    time `t_start`; every output time must be >= t_start. The CFL step is re-chosen at
    every output time and at least every `chunk` time units."""
    times = np.asarray(output_times, dtype=float)
    if times.ndim != 1 or np.any(np.diff(times) < 0) or times[0] < t_start:
        raise ValueError("output_times must be a non-decreasing list of times >= t_start")
    n = int(omega_hat.shape[0])
    with jax.enable_x64(x64):
        dtype = jnp.float64 if x64 else jnp.float32
        advance, max_speed = _compiled(n, float(nu), modulation, x64)
        w = jnp.asarray(omega_hat, dtype=jnp.complex128 if x64 else jnp.complex64)
        factor = transport_factor(modulation)
        t = float(t_start)
        out_w = []
        total_steps, min_dt = 0, math.inf
        for t_out in times:
            # The step is re-chosen at least every `chunk` time units, so a flow that
            # speeds up within a long interval keeps to the CFL limit.
            while float(t_out) - t > 0:
                t_next = min(float(t_out), t + chunk)
                interval = t_next - t
                dt = stable_step(float(max_speed(w)), n, cfl, factor, dt_max)
                steps = max(1, math.ceil(interval / dt - 1e-9))
                dt = interval / steps
                w = advance(w, jnp.asarray(dt, dtype=dtype), steps)
                total_steps += steps
                min_dt = min(min_dt, dt)
                t = float(t_out) if t_next == float(t_out) else t_next
            out_w.append(np.asarray(w))
        if not np.all(np.isfinite(out_w[-1])):
            raise FloatingPointError("the fluid solution blew up; lower the CFL number")
    return Solution(times, np.stack(out_w), total_steps,
                    float(min_dt if math.isfinite(min_dt) else 0.0))


# ---- laws with numbers as arguments (fits) -------------------------------------------
# A law family maps a parameter vector to a modulation, `family(params)(u, v, omega) ->
# C`. Its kernel is compiled once per (grid, viscosity, family) with the parameters as
# traced arguments, so a fit that tries many parameter values never recompiles, and
# forward-mode derivatives with respect to them come from `jax.jvp`.
LawFamily = Callable[["jax.Array"], Modulation]


@lru_cache(maxsize=16)
def _compiled_family(n: int, nu: float, family: LawFamily):
    ops = _operators(n)

    def advance(omega_hat, dt, n_steps, params):
        decay_half = jnp.exp(-0.5 * nu * ops.k2 * dt)
        modulation = family(params)
        body = lambda _, w: _lawson_rk4_step(w, dt, decay_half, ops, modulation)  # noqa: E731
        return jax.lax.fori_loop(0, n_steps, body, omega_hat)

    @jax.jit
    def advance_tangent(omega_hat, tangents, dt, n_steps, params):
        """The state after n_steps and its derivatives with respect to params, given
        those of the initial state (`tangents`, one per parameter)."""
        basis = jnp.eye(params.shape[0], dtype=params.dtype)

        def along(direction, tangent):
            return jax.jvp(lambda p, w: advance(w, dt, n_steps, p), (params, omega_hat),
                           (direction, tangent))

        states, derivatives = jax.vmap(along)(basis, tangents)
        return states[0], derivatives

    return jax.jit(advance), advance_tangent, _max_speed(n)


def simulate_family(omega_hat: np.ndarray, output_times: Sequence[float], *, nu: float,
                    family: LawFamily, params: Sequence[float], factor: float,
                    cfl: float = 0.5, dt_max: float = 0.05, chunk: float = 0.5,
                    with_tangents: bool = False
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    """`simulate_from` t = 0 under the law `family(params)`, with the same step choice
    (CFL step with transport factor `factor`, re-chosen at every output time and at
    least every `chunk`), so that with a family and factor that reproduce a world law
    it is the world's integrator. Returns the coefficients at the output times, and with
    `with_tangents` their derivatives with respect to params (T, P, N, N // 2 + 1)."""
    times = np.asarray(output_times, dtype=float)
    n = int(omega_hat.shape[0])
    with jax.enable_x64(True):
        advance, advance_tangent, max_speed = _compiled_family(n, float(nu), family)
        p = jnp.asarray(np.asarray(params, dtype=float))
        w = jnp.asarray(omega_hat, dtype=jnp.complex128)
        dw = jnp.zeros((p.shape[0], *w.shape), dtype=jnp.complex128)
        t, out_w, out_dw = 0.0, [], []
        for t_out in times:
            while float(t_out) - t > 0:
                t_next = min(float(t_out), t + chunk)
                interval = t_next - t
                dt = stable_step(float(max_speed(w)), n, cfl, factor, dt_max)
                steps = max(1, math.ceil(interval / dt - 1e-9))
                dt_j = jnp.asarray(interval / steps, dtype=jnp.float64)
                if with_tangents:
                    w, dw = advance_tangent(w, dw, dt_j, steps, p)
                else:
                    w = advance(w, dt_j, steps, p)
                t = float(t_out) if t_next == float(t_out) else t_next
            out_w.append(np.asarray(w))
            if with_tangents:
                out_dw.append(np.asarray(dw))
    return np.stack(out_w), (np.stack(out_dw) if with_tangents else None)


# ---- initial states -----------------------------------------------------------------
def double_shear_layer(n: int, thickness: float, amplitude: float,
                       phase: float = 0.0) -> np.ndarray:
    """Vorticity of the Kelvin-Helmholtz double shear layer on an N x N grid.

    Two opposing streams, u = tanh((y - pi/2) / delta) below y = pi and
    tanh((3 pi/2 - y) / delta) above, with interfaces at y = pi/2 and 3 pi/2, and a
    cross-stream perturbation v = amplitude sin(x - phase) (divergence-free: v depends on
    x only). The vorticity -du/dy + dv/dx sums the sech^2 interface profiles over their
    periodic images, so it is smooth and periodic (the plain piecewise form jumps by
    ~exp(-pi / delta) at y = pi, which spoils spectral convergence for thick layers)."""
    x, y = SpectralGrid(n).coordinates()
    profile = np.zeros_like(y)
    for image in (-1, 0, 1):
        shift = 2.0 * math.pi * image
        profile += _sech_squared((y - 0.5 * math.pi + shift) / thickness)
        profile -= _sech_squared((y - 1.5 * math.pi + shift) / thickness)
    return amplitude * np.cos(x - phase) - profile / thickness


def _sech_squared(z: np.ndarray) -> np.ndarray:
    """sech(z)^2 = 4 e^{-2|z|} / (1 + e^{-2|z|})^2, without overflow for large |z|."""
    e = np.exp(-2.0 * np.abs(z))
    return 4.0 * e / (1.0 + e) ** 2


def taylor_green(n: int, k: int = 1) -> np.ndarray:
    """Taylor-Green vorticity 2k sin(kx) sin(ky): u = sin kx cos ky, v = -cos kx sin ky.
    Decays as exp(-2 nu k^2 t) under the standard law."""
    x, y = SpectralGrid(n).coordinates()
    return 2.0 * k * np.sin(k * x) * np.sin(k * y)


# ---- reading the field --------------------------------------------------------------
def velocity_field(omega_hat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) on the grid from real-FFT vorticity coefficients (numpy, float64)."""
    n = omega_hat.shape[0]
    kx, ky = SpectralGrid(n).wavenumbers()
    k2 = kx**2 + ky**2
    psi_hat = np.where(k2 > 0, omega_hat / np.where(k2 > 0, k2, 1.0), 0.0)
    return (np.fft.irfft2(1j * ky * psi_hat, s=(n, n)),
            np.fft.irfft2(-1j * kx * psi_hat, s=(n, n)))


def spectral_divergence(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """du/dx + dv/dy on the grid, differentiated spectrally."""
    n = u.shape[0]
    kx, ky = SpectralGrid(n).wavenumbers()
    return np.fft.irfft2(1j * kx * np.fft.rfft2(u) + 1j * ky * np.fft.rfft2(v), s=(n, n))


def evaluate_at_points(omega_hat: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The band-limited field with real-FFT coefficients `omega_hat` (N x N//2+1) at
    arbitrary points, by direct summation of its Fourier series (exact for the
    dealiased field; cost points x N x N/2)."""
    n = omega_hat.shape[0]
    kx, ky = SpectralGrid(n).wavenumbers()
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    # Hermitian symmetry: every k_y > 0 column stands for itself and its mirror image,
    # except k_y = 0 and the Nyquist column (zero after dealiasing, weighted 1 anyway).
    weight = np.full(ky.shape[1], 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    ex = np.exp(1j * np.outer(x, kx[:, 0]))  # (P, N)
    ey = np.exp(1j * np.outer(y, ky[0, :]))  # (P, N//2+1)
    partial = ex @ omega_hat  # (P, N//2+1)
    return np.real(np.sum(partial * ey * weight, axis=1)) / (n * n)


# ---- the naive reference (bench and cross-check) -------------------------------------
@lru_cache(maxsize=16)
def _compiled_reference(n: int, nu: float, modulation: Modulation | None):
    kx = jnp.asarray(np.fft.fftfreq(n, 1.0 / n)[:, None])
    ky = jnp.asarray(np.fft.fftfreq(n, 1.0 / n)[None, :])
    k2 = kx**2 + ky**2
    inv_k2 = jnp.where(k2 > 0, 1.0 / jnp.where(k2 > 0, k2, 1.0), 0.0)
    mask = (jnp.abs(kx) < n / 3.0) & (jnp.abs(ky) < n / 3.0)

    def rhs(w_hat):
        psi = w_hat * inv_k2
        u = jnp.real(jnp.fft.ifft2(1j * ky * psi))
        v = jnp.real(jnp.fft.ifft2(-1j * kx * psi))
        wx = jnp.real(jnp.fft.ifft2(1j * kx * w_hat))
        wy = jnp.real(jnp.fft.ifft2(1j * ky * w_hat))
        term = -jnp.fft.fft2(u * wx + v * wy)
        if modulation is not None:
            c = modulation(u, v, jnp.real(jnp.fft.ifft2(w_hat)))
            term = term - 1j * kx * jnp.fft.fft2(c * u) - 1j * ky * jnp.fft.fft2(c * v)
        return jnp.where(mask, term, 0.0) - nu * k2 * w_hat

    @jax.jit
    def advance(w_hat, dt, n_steps):
        def body(_, w):
            a = rhs(w)
            b = rhs(w + 0.5 * dt * a)
            c = rhs(w + 0.5 * dt * b)
            d = rhs(w + dt * c)
            return w + dt * (a + 2 * b + 2 * c + d) / 6.0
        return jax.lax.fori_loop(0, n_steps, body, w_hat)

    return advance


def reference_simulate(omega0: np.ndarray, t_end: float, *, nu: float, dt: float = 1e-3,
                       modulation: Modulation | None = None, x64: bool = True) -> np.ndarray:
    """The naive scheme of the published setting: fixed-step classical RK4 with the
    viscous term explicit and complex FFTs (2/3 dealiased). Returns omega at t_end on
    the grid. Used as the speed reference and as an independent cross-check."""
    n = int(omega0.shape[0])
    steps = max(1, round(t_end / dt))
    with jax.enable_x64(x64):
        dtype = jnp.float64 if x64 else jnp.float32
        kx = np.fft.fftfreq(n, 1.0 / n)
        mask = (np.abs(kx)[:, None] < n / 3.0) & (np.abs(kx)[None, :] < n / 3.0)
        w = jnp.where(jnp.asarray(mask), jnp.fft.fft2(jnp.asarray(omega0, dtype=dtype)), 0.0)
        w = w.at[0, 0].set(0.0)
        w = _compiled_reference(n, float(nu), modulation)(w, jnp.asarray(t_end / steps,
                                                                          dtype=dtype), steps)
        return np.real(np.fft.ifft2(np.asarray(w)))
