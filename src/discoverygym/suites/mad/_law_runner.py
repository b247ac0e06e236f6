"""Runs inside the sandbox (shipped as its `main.py`, next to a package `madlaw` holding
the world's own integrator source). Never imported by the host.

Reads one JSON request on stdin: the agent's source, the world, and held-out initial
states; defines the agent's functions, plugs them into the world's step (NumPy
backend, all initial states as one batch) and prints one JSON line:
{"trajectory": [...], "mode": "..."} or {"error": "..."}."""

import json
import math
import os
import sys
import time
import traceback

import numpy as np

# Probe: a vectorised call must agree with one-at-a-time calls to this relative precision
# (algebraically equal code differs by rounding only).
PROBE_RTOL = 1e-9
N_PROBE = 12


class LawError(Exception):
    """The agent's law cannot be rolled out; the message says why."""


def agent_function(namespace, name, required=True):
    fn = namespace.get(name)
    if fn is None and not required:
        return None
    if not callable(fn):
        raise LawError(f"the source defines no function named {name}")
    return fn


def close(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return False
    scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-300)
    return bool(np.all(np.abs(a - b) <= PROBE_RTOL * scale))


def pair_force_for_arrays(fn, m_i, m_j, r_vec):
    """The agent's pair force as an arrays-in, arrays-out function, and how it is
    called: with arrays when it agrees with one-pair calls on a probe, else pair by
    pair (slower, as the signature allows)."""
    dim = r_vec.shape[-1]
    k = min(N_PROBE, len(m_i))

    def one_pair(a, b, r):
        out = np.asarray(fn(float(a), float(b), [float(c) for c in r]), dtype=float)
        if out.shape != (dim,):
            raise LawError(f"pair_force returned shape {list(out.shape)} for one pair; "
                           f"expected [{dim}]")
        return out

    def per_pair(mi, mj, r):
        return np.array([one_pair(a, b, c) for a, b, c in zip(mi, mj, r, strict=True)]).reshape(-1, dim)

    singles = per_pair(m_i[:k], m_j[:k], r_vec[:k])
    try:
        batch = np.asarray(fn(m_i[:k].copy(), m_j[:k].copy(), r_vec[:k].copy()), dtype=float)
        vectorised = close(batch, singles)
    except Exception:
        vectorised = False
    if not vectorised:
        return per_pair, "one pair at a time"

    def arrays(mi, mj, r):
        out = np.asarray(fn(mi, mj, r), dtype=float)
        if out.shape != r.shape:
            raise LawError(f"pair_force returned shape {list(out.shape)} for {len(r)} pairs; "
                           f"expected {list(r.shape)}")
        return out
    return arrays, "arrays"


def inertia_for_arrays(fn, dim):
    """The agent's `acceleration(force, mass, memory) -> (a, dmemory_dt)` on (P, D),
    (P,), (P, D, D) arrays, reshaped to the batch."""
    def inertia(force, mass, memory):
        batch = force.shape[:-1]
        out = fn(force.reshape(-1, dim), mass.reshape(-1), memory.reshape(-1, dim, dim))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise LawError("acceleration must return two things: (acceleration, "
                           "memory rate)")
        acc = np.asarray(out[0], dtype=float)
        rate = np.asarray(out[1], dtype=float)
        p = int(np.prod(batch))
        if acc.shape != (p, dim) or rate.shape != (p, dim, dim):
            raise LawError(f"acceleration returned shapes {list(acc.shape)} and "
                           f"{list(rate.shape)}; expected [{p}, {dim}] and [{p}, {dim}, {dim}]")
        return acc.reshape(*batch, dim), rate.reshape(*batch, dim, dim)
    return inertia


def classical(request, namespace):
    from madlaw import classical_physics as P

    x = np.asarray(request["x"], dtype=float)  # (K, N, D)
    v = np.asarray(request["v"], dtype=float)
    mass = np.asarray(request["mass"], dtype=float)  # (K, N)
    radius = np.asarray(request["radius"], dtype=float)
    dim = x.shape[-1]
    pair_fn = agent_function(namespace, "pair_force")
    n = x.shape[-2]
    first = [i for i in range(n) for j in range(n) if j != i]
    second = [j for i in range(n) for j in range(n) if j != i]
    pair_force, mode = pair_force_for_arrays(
        pair_fn, mass[:, first].ravel(), mass[:, second].ravel(),
        (x[:, second] - x[:, first]).reshape(-1, dim))
    inertia_fn = agent_function(namespace, "acceleration", required=False)
    inertia = (P.standard_inertia(xp=np) if inertia_fn is None
               else inertia_for_arrays(inertia_fn, dim))
    step = P.make_field_step(P.pairwise_forces(pair_force, xp=np), inertia,
                             float(request["dt"]), float(request["half_width"]), xp=np)
    state = P.State(x, v, np.zeros((*x.shape, dim)))
    bodies = P.Bodies(mass, radius)
    out = []
    for k in range(int(request["n_outputs"])):
        for _ in range(int(request["steps_per_output"])):
            state = step(state, bodies)
        if not np.all(np.isfinite(state.x)):
            raise LawError(f"the positions became NaN or infinite before t = "
                           f"{(k + 1) * request['steps_per_output'] * request['dt']:g}")
        out.append(state.x)
    return np.stack(out, axis=1), mode + ("" if inertia_fn is None else
                                          "; acceleration() used")


def fluid(request, namespace):
    from madlaw import fluid_solver as fs

    fn = agent_function(namespace, "body_force")
    n = int(request["resolution"])
    omega = np.asarray(request["omega"], dtype=float)  # (K, n, n)
    shape = omega.shape

    def body_force(u, v, w):
        out = fn(u, v, w)
        if isinstance(out, np.ndarray) and out.ndim >= 1 and out.shape[0] == 2:
            fx, fy = out[0], out[1]
        elif isinstance(out, (tuple, list)) and len(out) == 2:
            fx, fy = out
        else:
            raise LawError("body_force must return [f_x, f_y]")
        try:
            return (np.broadcast_to(np.asarray(fx, dtype=float), u.shape),
                    np.broadcast_to(np.asarray(fy, dtype=float), u.shape))
        except ValueError:
            raise LawError(f"body_force on arrays of shape {list(u.shape)} returned parts "
                           "that do not have that shape") from None

    # The probe: arrays-in must equal one-point calls (a rollout point by point would
    # take hours, so a function that only takes single numbers cannot be rolled out).
    rng = np.random.default_rng(0)
    u0, v0, w0 = (rng.uniform(-1.5, 1.5, N_PROBE), rng.uniform(-1.5, 1.5, N_PROBE),
                  rng.uniform(-20.0, 20.0, N_PROBE))
    singles = np.array([np.asarray(fn(float(a), float(b), float(c)), dtype=float).reshape(2)
                        for a, b, c in zip(u0, v0, w0, strict=True)])
    try:
        batch = np.stack(body_force(u0, v0, w0), axis=-1)
        agrees = close(batch, singles)
    except Exception as exc:
        raise LawError("body_force must work elementwise on NumPy arrays u, v, omega (it "
                       f"failed on arrays: {type(exc).__name__}: {exc})"[:600]) from None
    if not agrees:
        raise LawError("body_force on NumPy arrays does not give the same values as on "
                       "single numbers; it must work elementwise on arrays")
    mask = fs.SpectralGrid(n).dealias_mask()
    w_hat = np.where(mask, np.fft.rfft2(omega), 0.0)
    w_hat[..., 0, 0] = 0.0
    stride = int(request["sample_stride"])
    out = []
    for k in range(int(request["n_outputs"])):
        w_hat = fs.fixed_step_advance(w_hat, float(request["dt"]),
                                      int(request["steps_per_output"]), nu=float(request["nu"]),
                                      body_force=body_force, xp=np)
        field = np.fft.irfft2(w_hat, s=shape[-2:])[..., ::stride, ::stride]
        if not np.all(np.isfinite(field)):
            raise LawError(f"the vorticity became NaN or infinite before t = "
                           f"{(k + 1) * request['steps_per_output'] * request['dt']:g}")
        out.append(field)
    return np.stack(out, axis=1), "arrays"


def elementwise(fn, name, args, shape):
    """fn(*args) on arrays, as a float array of `shape` (broadcast), after a probe: on the
    first N_PROBE elements, arrays-in must equal one-at-a-time calls."""
    flat = [np.broadcast_to(a, shape).ravel()[:N_PROBE] for a in args]
    singles = np.array([float(fn(*(float(a[i]) for a in flat))) for i in range(len(flat[0]))])
    try:
        probe = np.broadcast_to(np.asarray(fn(*(a.copy() for a in flat)), dtype=float),
                                singles.shape)
        agrees = close(probe, singles)
    except Exception as exc:
        raise LawError(f"{name} must work elementwise on NumPy arrays (it failed on arrays: "
                       f"{type(exc).__name__}: {exc})"[:600]) from None
    if not agrees:
        raise LawError(f"{name} on NumPy arrays does not give the same values as on single "
                       "numbers; it must work elementwise on arrays")
    try:
        out = np.broadcast_to(np.asarray(fn(*args), dtype=float), shape)
    except ValueError:
        raise LawError(f"{name} returned an array that does not have the inputs' shape "
                       f"{list(shape)}") from None
    if not np.all(np.isfinite(out)):
        raise LawError(f"{name} returned NaN or infinite values")
    return out


def quantum(request, namespace):
    from madlaw import quantum_solver as qs

    weight_fn = agent_function(namespace, "outcome_weight")
    correlation_fn = agent_function(namespace, "initial_correlation", required=False)
    first, second = (qs.Eigensystem(np.load(f"data/{k}_energies.npy", allow_pickle=False),
                                    np.load(f"data/{k}_vectors.npy", allow_pickle=False))
                     for k in ("first", "second"))
    grid = qs.QuantumGrid(int(request["grid"]), float(request["size"]))
    x, y = grid.cell_centres()
    cells = x.size
    factor = 1.0
    if correlation_fn is not None:
        factor = elementwise(correlation_fn, "initial_correlation",
                             (x[:, None], y[:, None], x[None, :], y[None, :]), (cells, cells))
    out = []
    for packet in request["packets"]:
        psi1, psi2 = (qs.gaussian_packet(grid, packet["means"][k], packet["widths"][k],
                                         packet["momenta"][k]) for k in (0, 1))
        psi0 = psi1[:, None] * factor * psi2[None, :]
        norm = np.linalg.norm(psi0)
        if not np.isfinite(norm) or not norm > 0:
            raise LawError("initial_correlation leaves no initial state (norm 0 or not finite)")
        propagator = qs.Propagator.from_state(first, second, psi0 / norm)
        row = []
        for t in request["times"]:
            psi = propagator.state(float(t))
            weight = elementwise(weight_fn, "outcome_weight", (np.abs(psi),), psi.shape)
            total = float(weight.sum())
            if np.any(weight < 0) or not total > 0 or not np.isfinite(total):
                raise LawError("outcome_weight must be non-negative with a positive sum")
            density = weight / total
            row.append([density.sum(axis=1), density.sum(axis=0)])
        out.append(row)
    called = "arrays" + ("; initial_correlation() used" if correlation_fn is not None else "")
    return np.array(out), called


def main():
    # python -I leaves the script's folder off sys.path; `madlaw` lies beside main.py.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    request = json.loads(sys.stdin.read())
    started = time.perf_counter()
    reply_to = sys.stdout
    # The agent's prints (a debugging line in a function called 10 000 times) must not
    # push the reply out of the captured output.
    sys.stdout = open(os.devnull, "w")
    try:
        namespace = {"np": np, "numpy": np, "math": math, "__name__": "agent_law"}
        exec(compile(request["source"], "<agent law>", "exec"), namespace)
        runner = {"classical": classical, "fluid": fluid, "quantum": quantum}[request["world"]]
        trajectory, mode = runner(request, namespace)
        reply = {"trajectory": trajectory.tolist(), "mode": mode,
                 "seconds": time.perf_counter() - started}
    except BaseException as exc:  # the agent's code may raise anything
        if isinstance(exc, LawError):
            text = str(exc)
        else:
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        reply = {"error": text[-1000:]}
    reply_to.write("\n" + json.dumps(reply) + "\n")
    reply_to.flush()


if __name__ == "__main__":
    main()
