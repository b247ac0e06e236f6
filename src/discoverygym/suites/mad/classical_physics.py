"""Classical world physics in JAX: N hard spheres in the box [-L, L]^D under a pair
force law, with an inertia model, elastic collisions and semi-implicit Euler.

Everything is a pure function over explicit state (JAX-MD style). An altered law is a
different `PairForceLaw` or `InertiaModel` handed to the same `make_advance`; the step
never branches on a law's name.

The step functions take the array module as `xp` (default `jax.numpy`) and accept
leading batch axes (`x` of shape (..., N, D)): the law score (`law_rollout.py`) runs
this same step with NumPy inside the sandbox, with an agent's force and inertia
functions plugged in, on a batch of held-out initial states.

Float64 on the CPU: every JAX call of this module must run inside `x64()` (a local
`jax.enable_x64(True)` context on the CPU device), so the rest of the process keeps
JAX's float32 default and its default device. The cached compiled functions are
created and called inside that context."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import numpy as np

try:
    from ...physics.lazy_import import lazy_module
except ImportError:  # in the sandbox this file is `madlaw/classical_physics.py`, beside it
    from .lazy_import import lazy_module  # type: ignore[no-redef]

from . import constants as C

# Imported on first use: planning and the NumPy sandbox load this module without JAX
jax = lazy_module("jax")
jnp = lazy_module("jax.numpy")


@contextmanager
def x64() -> Iterator[None]:
    """The context every call into this module runs in: float64, on the CPU even when
    JAX sees a GPU. A few spheres are far too small a problem for a GPU (each of the
    330 000 sequential steps would cost a kernel launch), and the motion is chaotic
    over T_max = 300: pinning one platform keeps a seed's truths the same on every
    machine, whatever accelerator it has."""
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
        yield


class State(NamedTuple):
    """Dynamical state. x, v: (N, D) positions and velocities; s: (N, D, D) the
    inertia memory S of the anisotropic-inertia law (stays zero otherwise)."""

    x: jax.Array
    v: jax.Array
    s: jax.Array


class Bodies(NamedTuple):
    """Fixed per-particle properties: mass (N,), radius (N,)."""

    mass: jax.Array
    radius: jax.Array


# A pair force law: softened separation r (any shape) -> |F| / (m_i m_j), the force
# magnitude per unit mass product.
PairForceLaw = Callable[["jax.Array"], "jax.Array"]
# An inertia model: (force (N, D), mass (N,), s (N, D, D)) -> (acceleration, dS/dt).
InertiaModel = Callable[["jax.Array", "jax.Array", "jax.Array"], tuple["jax.Array", "jax.Array"]]
# A force field: (positions (..., N, D), masses (..., N)) -> total force on each (..., N, D).
ForceField = Callable[["jax.Array", "jax.Array"], "jax.Array"]
# A vector pair force for P pairs at once: (m_i (P,), m_j (P,), r_vec (P, D)) -> (P, D),
# the force on i from j with r_vec = x_j - x_i (the form an agent's `pair_force` takes).
PairForceFunction = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


# ---- force laws ----------------------------------------------------------------------
def newton_force(g: float = C.G) -> PairForceLaw:
    """Newtonian gravity: |F| = G m_i m_j / r^2."""
    return lambda r: g / r**2


def inverse_r_force(g: float = C.G) -> PairForceLaw:
    """1/R gravity: |F| = G m_i m_j / r."""
    return lambda r: g / r


def ripple_force(g: float = C.G, amplitude: float = C.RIPPLE_AMPLITUDE,
                 wavelength: float = C.RIPPLE_WAVELENGTH, phase: float = C.RIPPLE_PHASE
                 ) -> PairForceLaw:
    """Ripple gravity: |F| = G m_i m_j / r^2 * [1 + A sin(2 pi r / lambda_g + phi)]."""
    return lambda r: g / r**2 * (1.0 + amplitude * jnp.sin(2.0 * jnp.pi * r / wavelength + phase))


def pair_forces(x: jax.Array, mass: jax.Array, law: PairForceLaw,
                softening: float = C.SOFTENING, xp=jnp) -> jax.Array:
    """Total force (N, D) on each particle: sum over j of |F|(r_s) along x_j - x_i, with
    the Plummer-softened separation r_s = sqrt(r^2 + eps^2). The self term vanishes
    because its separation vector is zero."""
    sep = x[..., None, :, :] - x[..., :, None, :]  # [i, j] = x_j - x_i
    r_soft = xp.sqrt(xp.sum(sep**2, axis=-1) + softening**2)
    per_r = law(r_soft) * mass[..., :, None] * mass[..., None, :] / r_soft
    return xp.sum(per_r[..., None] * sep, axis=-2)


def radial_forces(law: PairForceLaw, softening: float = C.SOFTENING, xp=jnp) -> ForceField:
    """The force field of a radial law (the benchmark's laws): `pair_forces`."""
    return lambda x, mass: pair_forces(x, mass, law, softening, xp)


def pairwise_forces(pair_force: PairForceFunction, xp=np) -> ForceField:
    """The force field of a vector pair force called once for all ordered pairs i != j
    (P = batch x N x (N - 1) rows), unsoftened: the force on i is the sum over j."""
    def forces(x, mass):
        n, dim = x.shape[-2], x.shape[-1]
        if n < 2:
            return xp.zeros_like(x)
        first = [i for i in range(n) for j in range(n) if j != i]
        second = [j for i in range(n) for j in range(n) if j != i]
        r_vec = x[..., second, :] - x[..., first, :]  # (..., N (N - 1), D)
        per_pair = pair_force(xp.reshape(mass[..., first], (-1,)),
                              xp.reshape(mass[..., second], (-1,)),
                              xp.reshape(r_vec, (-1, dim)))
        per_pair = xp.reshape(per_pair, (*x.shape[:-2], n, n - 1, dim))
        return xp.sum(per_pair, axis=-2)
    return forces


# ---- inertia models -------------------------------------------------------------------
def standard_inertia(xp=jnp) -> InertiaModel:
    """a = F / m; S stays zero."""
    def inertia(force, mass, s):
        return force / mass[..., None], xp.zeros_like(s)
    return inertia


def _solve_identity_plus(b: jax.Array, f: jax.Array, xp=jnp) -> jax.Array:
    """(I + B)^-1 f for batches of 2x2 or 3x3 B, by the adjugate. With B = 0 the
    adjugate is I and the determinant 1, so the result is f bit for bit (this makes
    kappa = 0 reduce exactly to the standard law)."""
    dim = b.shape[-1]
    m = b + xp.eye(dim, dtype=b.dtype)
    if dim == 2:
        a, bb, c, d = m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1]
        det = a * d - bb * c
        out0 = d * f[..., 0] - bb * f[..., 1]
        out1 = -c * f[..., 0] + a * f[..., 1]
        return xp.stack([out0, out1], axis=-1) / det[..., None]
    if dim == 3:
        cof = xp.stack([
            xp.cross(m[..., 1, :], m[..., 2, :]),
            xp.cross(m[..., 2, :], m[..., 0, :]),
            xp.cross(m[..., 0, :], m[..., 1, :]),
        ], axis=-1)  # columns are the cofactor rows: cof = adj(m)
        det = xp.sum(m[..., 0, :] * cof[..., :, 0], axis=-1)
        return xp.einsum("...ij,...j->...i", cof, f) / det[..., None]
    raise ValueError(f"dimension must be 2 or 3, got {dim}")


def anisotropic_inertia(kappa: float, decay_rate: float = C.INERTIA_DECAY_RATE,
                        xp=jnp) -> InertiaModel:
    """Anisotropic inertia: a = M^-1 F with M = m I + kappa S and dS/dt = -lambda S + a a^T
    (lambda = `decay_rate`). S is positive semi-definite, so M is positive definite."""
    def inertia(force, mass, s):
        scale = kappa / mass
        acc = _solve_identity_plus(scale[..., None, None] * s, force, xp) / mass[..., None]
        rate = -decay_rate * s + acc[..., :, None] * acc[..., None, :]
        return acc, rate
    return inertia


# ---- collisions -----------------------------------------------------------------------
def collide_spheres(x: jax.Array, v: jax.Array, bodies: Bodies, xp=jnp) -> jax.Array:
    """Elastic (restitution 1) impulses between touching spheres that approach each
    other. All pairs are resolved at once from the pre-collision velocities (exact for
    any number of disjoint pairs; a rare triple contact gets the sum of pair impulses)."""
    n = x.shape[-2]
    sep = x[..., None, :, :] - x[..., :, None, :]  # x_j - x_i
    eye = xp.eye(n, dtype=bool)
    dist = xp.sqrt(xp.sum(sep**2, axis=-1))
    safe = xp.where(eye, 1.0, dist)
    normal = sep / safe[..., None]
    rel = xp.sum((v[..., None, :, :] - v[..., :, None, :]) * normal, axis=-1)  # (v_j - v_i).n
    radius = bodies.radius
    contact = (dist < radius[..., :, None] + radius[..., None, :]) & ~eye & (rel < 0)
    m = bodies.mass
    weight = xp.where(contact, 2.0 * m[..., None, :] / (m[..., :, None] + m[..., None, :])
                      * rel, 0.0)
    return v + xp.sum(weight[..., None] * normal, axis=-2)


def bounce_walls(x: jax.Array, v: jax.Array, radius: jax.Array,
                 half_width: float = C.BOX_HALF_WIDTH, xp=jnp) -> jax.Array:
    """Reflect the velocity component of a sphere that touches a wall and moves into it."""
    lo = -half_width + radius[..., None]
    hi = half_width - radius[..., None]
    into = ((x < lo) & (v < 0)) | ((x > hi) & (v > 0))
    return xp.where(into, -v, v)


def mirror_walls(x: jax.Array, v: jax.Array, radius: jax.Array,
                 half_width: float = C.BOX_HALF_WIDTH, xp=jnp) -> tuple[jax.Array, jax.Array]:
    """A smooth stand-in for `bounce_walls` for fits that differentiate a rollout: a
    sphere past a wall and moving into it is mirrored back (position and velocity).
    `bounce_walls` leaves the position alone, so its derivative with respect to the
    initial state keeps the unreflected sign between the discrete bounce steps; this
    one has the reflected sign, and its path differs by at most |v| dt."""
    lo = -half_width + radius[..., None]
    hi = half_width - radius[..., None]
    above, below = (x > hi) & (v > 0), (x < lo) & (v < 0)
    x = xp.where(above, 2 * hi - x, xp.where(below, 2 * lo - x, x))
    return x, xp.where(above | below, -v, v)


# ---- the integrator -------------------------------------------------------------------
def make_step(force_law: PairForceLaw, inertia: InertiaModel, dt: float = C.DT,
              softening: float = C.SOFTENING, half_width: float = C.BOX_HALF_WIDTH,
              mirror: bool = False) -> Callable[[State, Bodies], State]:
    """One semi-implicit Euler step: a from the current positions (and S), v += a dt,
    x += v dt, S += dS/dt dt, then collisions with spheres and walls (`mirror`: the
    walls of `mirror_walls`, for differentiated fits; the world never uses it)."""
    return make_field_step(radial_forces(force_law, softening), inertia, dt, half_width,
                           mirror=mirror)


def make_field_step(forces: ForceField, inertia: InertiaModel, dt: float = C.DT,
                    half_width: float = C.BOX_HALF_WIDTH, xp=jnp, mirror: bool = False
                    ) -> Callable[[State, Bodies], State]:
    """`make_step` for any force field and array module (states may carry batch axes)."""
    def step(state: State, bodies: Bodies) -> State:
        force = forces(state.x, bodies.mass)
        acc, s_rate = inertia(force, bodies.mass, state.s)
        v = state.v + dt * acc
        x = state.x + dt * v
        s = state.s + dt * s_rate
        v = collide_spheres(x, v, bodies, xp)
        if mirror:
            x, v = mirror_walls(x, v, bodies.radius, half_width, xp)
        else:
            v = bounce_walls(x, v, bodies.radius, half_width, xp)
        return State(x, v, s)
    return step


@dataclass(frozen=True)
class Law:
    """A named law of the classical world: a pair force law and an inertia model."""

    name: str
    description: str
    force_law: PairForceLaw
    inertia: InertiaModel
    kappa: float = 0.0


class Integrator:
    """Jitted integration of one law (compiled once per particle count and dimension).

    `advance(state, bodies, n_steps)` runs `n_steps` steps: whole chunks of
    `chunk_steps` as one `lax.scan`, the remainder in a `fori_loop` of the same step.
    `snapshots(state, bodies, n)` returns the states after 0, 1, ..., n - 1 chunks. Both apply the same step function, so a state read at any
    step is the integrator's state there. Call them inside `x64()`."""

    def __init__(self, law: Law, chunk_steps: int = C.SNAPSHOT_STRIDE_STEPS,
                 dt: float = C.DT) -> None:
        self.law = law
        self.chunk_steps = int(chunk_steps)
        step = make_step(law.force_law, law.inertia, dt)

        def chunk(state: State, bodies: Bodies) -> State:
            def body(carry, _):
                return step(carry, bodies), None
            out, _ = jax.lax.scan(body, state, None, length=self.chunk_steps)
            return out

        def run(state: State, bodies: Bodies, n_chunks: jax.Array, n_rest: jax.Array) -> State:
            state = jax.lax.fori_loop(0, n_chunks, lambda _, s: chunk(s, bodies), state)
            return jax.lax.fori_loop(0, n_rest, lambda _, s: step(s, bodies), state)

        self._run = jax.jit(run)

    def advance(self, state: State, bodies: Bodies, n_steps: int) -> State:
        """The state after `n_steps` more steps."""
        n_chunks, n_rest = divmod(int(n_steps), self.chunk_steps)
        return self._run(state, bodies, n_chunks, n_rest)

    def positions_after(self, state: State, bodies: Bodies, steps: Sequence[int], start: int = 0
                        ) -> np.ndarray:
        """Positions after each of the increasing step counts `steps`, counted like
        `start`, the step `state` is at. Batch axes of `state` come first: the output is
        (..., len(steps), N, D) (NumPy)."""
        out, done = [], int(start)
        for step in steps:
            state = self.advance(state, bodies, int(step) - done)
            done = int(step)
            out.append(np.asarray(state.x))
        return np.stack(out, axis=-3)

    def snapshots(self, state: State, bodies: Bodies, n_snapshots: int) -> State:
        """States after 0 .. n_snapshots - 1 chunks, stacked along a new first axis (NumPy).
        One compiled function serves this and `advance`, which halves compile time."""
        out = [state]
        for _ in range(int(n_snapshots) - 1):
            out.append(self.advance(out[-1], bodies, self.chunk_steps))
        return State(*(np.stack([np.asarray(getattr(s, f)) for s in out])
                       for f in State._fields))


def make_advance(law: Law, chunk_steps: int = C.SNAPSHOT_STRIDE_STEPS, dt: float = C.DT
                 ) -> Callable[[State, Bodies, int], State]:
    """A jitted `advance(state, bodies, n_steps)` for `law` (see `Integrator`)."""
    return Integrator(law, chunk_steps, dt).advance


def as_state(x: np.ndarray, v: np.ndarray, s: np.ndarray | None = None) -> State:
    """A float64 State from NumPy arrays (call inside `x64()`)."""
    x = jnp.asarray(x, dtype=jnp.float64)
    d = x.shape[-1]
    s = jnp.zeros((*x.shape, d), dtype=jnp.float64) if s is None else jnp.asarray(s, jnp.float64)
    return State(x, jnp.asarray(v, dtype=jnp.float64), s)


def as_bodies(mass: np.ndarray, radius: np.ndarray) -> Bodies:
    """Float64 Bodies from NumPy arrays (call inside `x64()`)."""
    return Bodies(jnp.asarray(mass, dtype=jnp.float64), jnp.asarray(radius, dtype=jnp.float64))


# ---- the laws of the benchmark ----------------------------------------------------------
def build_law(name: str, inertia_decay: float = C.INERTIA_DECAY_RATE) -> Law:
    """The law called `name` (see LAW_NAMES); `inertia_decay` is lambda of the
    anisotropic-inertia laws."""
    table: dict[str, Callable[[], Law]] = {
        "normal": lambda: Law("normal", "Newtonian gravity", newton_force(), standard_inertia()),
        "kappa10": lambda: Law("kappa10", "Newtonian gravity with anisotropic inertia, kappa=10",
                               newton_force(), anisotropic_inertia(10.0, inertia_decay), 10.0),
        "kappa20": lambda: Law("kappa20", "Newtonian gravity with anisotropic inertia, kappa=20",
                               newton_force(), anisotropic_inertia(20.0, inertia_decay), 20.0),
        "inv-r": lambda: Law("inv-r", "1/R gravity", inverse_r_force(), standard_inertia()),
        "ripple": lambda: Law("ripple", "ripple gravity", ripple_force(), standard_inertia()),
        "combined": lambda: Law("combined", "1/R gravity with anisotropic inertia, kappa=10",
                                inverse_r_force(), anisotropic_inertia(10.0, inertia_decay), 10.0),
    }
    if name.startswith("kappa=") or name.startswith("aniso-"):
        kappa = float(name.split("=" if "=" in name else "-", 1)[1])
        return Law(name, f"Newtonian gravity with anisotropic inertia, kappa={kappa:g}",
                   newton_force(), anisotropic_inertia(kappa, inertia_decay), kappa)
    if name not in table:
        raise ValueError(f"unknown classical law {name!r}; laws: {', '.join(table)}")
    return table[name]()


LAW_NAMES = ("normal", "kappa10", "kappa20", "inv-r", "ripple", "combined")


@cache
def integrator_for(law_name: str, inertia_decay: float = C.INERTIA_DECAY_RATE,
                   chunk_steps: int = C.SNAPSHOT_STRIDE_STEPS) -> Integrator:
    """One Integrator per law in a process (JAX then compiles once per shape N, D)."""
    return Integrator(build_law(law_name, inertia_decay), chunk_steps)


def advance_for(law_name: str, inertia_decay: float = C.INERTIA_DECAY_RATE,
                chunk_steps: int = C.SNAPSHOT_STRIDE_STEPS) -> Callable[[State, Bodies, int], State]:
    """The cached jitted advance function of a law."""
    return integrator_for(law_name, inertia_decay, chunk_steps).advance
