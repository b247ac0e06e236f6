"""The law score: an agent's law, as code, judged by the futures it predicts.

The function the agent hands to `describe_law` (classical: `pair_force`, optionally
`acceleration`; fluid: `body_force`; quantum: `outcome_weight`, optionally
`initial_correlation`) is plugged into the world's own integrator
(`classical_physics.make_field_step`, `fluid_solver.fixed_step_advance`, run with NumPy;
`quantum_solver.Propagator`) and rolled out from held-out initial states the agent
never saw. They are drawn from
the episode seed on a stream of their own (`LAW_SCORE_STREAM`) and appear in no prompt,
tool result or workspace. The truth is the same states rolled out under the world's
true law by the host's JAX integrator; the reference is normal physics rolled out the
same way:

    law score = clip(1 - error(agent) / error(reference), 0, 1)

error = RMS over states, output times and entries of (rollout - truth rollout). 1 is as
good as the true law, 0 no better than normal physics (or worse). Where normal physics
is the truth (the normal law, kappa = 0) the reference is the median error of the
world's altered laws instead: 0 then means as wrong as a typical alien law.

The agent's code is hostile: it runs in a fresh sandbox process (`run_isolated`: no
network, no package source or caches, memory, CPU and wall-clock limits), together with
the integrator's source, and only a trajectory comes back (decoded with bounds). Every
failure (exception, timeout, NaN, wrong shape, forged output) is a law score of 0 with
the reason recorded; nothing here raises, and nothing here reaches the agent."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ... import physics as shared_physics
from ...core.bounded import Bounds, UnsafeInput, clip, loads
from . import streams
from .law_check import MINIMUM_ISOLATION

# The held-out initial states come from default_rng([seed, LAW_SCORE_STREAM]); no other
# generator of the suite uses this stream.
LAW_SCORE_STREAM = streams.MAD_LAW_SCORE
TIME_LIMIT_S = 60.0  # ours: wall-clock limit of one rollout in the sandbox
MEMORY_MB = 3072  # ours: JAX's import alone reserves much address space
# The normal-law rollout counts as "the truth" (reference switches to the altered laws)
# when it is this close to the true rollout, relative to the truth's RMS.
SAME_AS_TRUTH = 1e-12
# The integrator sources shipped to the sandbox as package `madlaw`; the fluid solver is
# the shared one in physics/ (the packages suite runs it too).
_SUITE_SOURCES = ("constants.py", "classical_physics.py", "quantum_solver.py")
_PHYSICS_SOURCES = ("fluid_solver.py", "lazy_import.py")


@dataclass(frozen=True)
class HeldOut:
    """What a world gives the law score. `request`: JSON-able held-out initial states and
    integrator settings for the sandbox runner (no law, no truth); `rollout(law)`: the
    host's rollout of those states under a named law of the world, shape
    (states, outputs, ...); `altered_laws`: the references where normal physics is the
    truth; `description`: what the record says about the setup; `arrays`: large public
    inputs of the runner (the quantum eigensystems), shipped as .npy files."""

    request: dict[str, Any]
    rollout: Callable[[str], np.ndarray]
    normal_law: str
    altered_laws: tuple[str, ...]
    description: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


def rms(a: np.ndarray, b: np.ndarray | None = None) -> float:
    """Root mean square of a (or of a - b) over all entries."""
    diff = np.asarray(a, dtype=float) - (0.0 if b is None else np.asarray(b, dtype=float))
    return float(np.sqrt(np.mean(diff**2)))


def law_score(error: float, reference_error: float) -> float:
    """clip(1 - error / reference error, 0, 1); a zero reference error scores 1 only for a
    zero error."""
    if not np.isfinite(error):
        return 0.0
    if reference_error <= 0:
        return 1.0 if error <= 0 else 0.0
    return float(min(1.0, max(0.0, 1.0 - error / reference_error)))


def run_agent_rollout(source: str, request: dict[str, Any], timeout_s: float = TIME_LIMIT_S,
                      arrays: dict[str, np.ndarray] | None = None
                      ) -> tuple[np.ndarray, str, float]:
    """Roll out the held-out states under the agent's law in a fresh sandbox process.
    Returns (trajectory, how the function was called, sandbox seconds); raises
    RolloutFailed with a reason."""
    from ...sandbox import SandboxConfig, SandboxUnavailable, run_isolated

    here = Path(__file__).parent
    physics = Path(shared_physics.__file__).parent
    files = {f"madlaw/{name}": (folder / name).read_bytes()
             for folder, names in ((here, _SUITE_SOURCES), (physics, _PHYSICS_SOURCES))
             for name in names}
    files["madlaw/__init__.py"] = b""
    for name, array in (arrays or {}).items():
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(array), allow_pickle=False)
        files[f"data/{name}.npy"] = buffer.getvalue()
    config = SandboxConfig(time_limit_s=timeout_s, cpu_s=int(timeout_s) + 10,
                           memory_mb=MEMORY_MB, preload={}, output_limit_chars=4_000_000,
                           minimum_isolation=MINIMUM_ISOLATION)
    payload = json.dumps({**request, "source": source}).encode()
    try:
        result = run_isolated((here / "_law_runner.py").read_text(), stdin=payload,
                              config=config, files=files)
    except SandboxUnavailable as exc:
        raise RolloutFailed(f"the law was not rolled out: {exc}") from None
    if result.timed_out:
        raise RolloutFailed(f"the rollout did not finish within {timeout_s:g} s")
    lines = result.stdout.decode(errors="replace").strip().splitlines()
    if not lines:
        reason = result.killed_reason or f"exit code {result.returncode}"
        raise RolloutFailed(f"the rollout's process ended without a result ({reason})")
    try:
        reply = loads(lines[-1], Bounds(max_depth=8, max_items=2_000_000),
                      what="the rollout's result")
    except UnsafeInput as exc:
        raise RolloutFailed(f"the rollout printed no valid result ({exc})") from None
    if not isinstance(reply, dict):
        raise RolloutFailed("the rollout printed no valid result")
    if "error" in reply:
        raise RolloutFailed(clip(str(reply["error"]), 600))
    try:
        trajectory = np.asarray(reply["trajectory"], dtype=float)
    except (KeyError, TypeError, ValueError):
        raise RolloutFailed("the rollout's trajectory is not an array of numbers") from None
    mode = reply.get("mode")
    return trajectory, clip(mode if isinstance(mode, str) else "?", 100), result.duration_s


class RolloutFailed(Exception):
    """The agent's law could not be rolled out; the message says why (record only)."""


def score_law_by_rollout(world: Any, source: str, timeout_s: float = TIME_LIMIT_S
                         ) -> dict[str, Any] | None:
    """The law score of `source` in `world` and how it was obtained (a JSON-able dict for
    the record: "score", "error", "reference_error", "reference", "reason" on failure).
    None for a world without held-out rollouts. Never raises."""
    started = time.perf_counter()
    try:
        held_out = world.law_rollout()
    except Exception as exc:  # a bug of ours must not lose the record
        return {"score": 0.0, "reason": f"internal error while preparing the rollout: "
                f"{clip(repr(exc), 300)}"}
    if held_out is None:
        return None
    out: dict[str, Any] = {"score": 0.0, **held_out.description}
    try:
        truth = held_out.rollout(world.law)
        trajectory, mode, sandbox_s = run_agent_rollout(source, held_out.request, timeout_s,
                                                        held_out.arrays)
        out.update({"called": mode, "sandbox_s": round(sandbox_s, 3)})
        if trajectory.shape != truth.shape:
            raise RolloutFailed(f"the rollout has shape {list(trajectory.shape)}; expected "
                                f"{list(truth.shape)}")
        if not np.all(np.isfinite(trajectory)):
            raise RolloutFailed("the rollout holds NaN or infinite values")
        reference_name, reference_error = _reference(held_out, truth)
        error = rms(trajectory, truth)
        out.update({"score": law_score(error, reference_error), "error": error,
                    "reference_error": reference_error, "reference": reference_name})
    except RolloutFailed as exc:
        out["reason"] = str(exc)
    except Exception as exc:  # never lose the record over a law score
        out["reason"] = f"internal error during the rollout: {clip(repr(exc), 300)}"
    out["seconds"] = round(time.perf_counter() - started, 3)
    return out


def _reference(held_out: HeldOut, truth: np.ndarray) -> tuple[str, float]:
    """Normal physics, unless it is the truth: then the median of the altered laws."""
    normal_error = rms(held_out.rollout(held_out.normal_law), truth)
    if normal_error > SAME_AS_TRUTH * max(rms(truth), 1e-300):
        return held_out.normal_law, normal_error
    errors = [rms(held_out.rollout(law), truth) for law in held_out.altered_laws]
    return "median of the altered laws", float(np.median(errors))
