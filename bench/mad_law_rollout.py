"""Benchmark of the mad law score (`suites/mad/law_rollout.py`): the cost one
`describe_law` adds. Prints one JSON object with, per case, the median over `--repeats`
runs of:

- `total_s`: the whole law score (host rollouts of the truth and the reference under
  JAX, warm after the first run; plus the sandbox rollout);
- `sandbox_s`: the sandbox process alone (start, NumPy/JAX import, the agent's law in
  the world's step for every held-out state, the reply);

and the score it gave (medians over the runs after the first). Cases: the classical world (3 spheres in 3D, inv-r) with the
true law written for arrays and written for one pair at a time, and with the true law
plus an `acceleration` function (kappa20); the fluid world (vort5) with the true body
force; the quantum world (combined) with the true outcome rule and correlation. The
first run of each case also pays the JAX compilation (`first_total_s`).

`--table` prints instead the law score of the two reference answers
(`law_sources.py`: normal physics and the true law) for every law of every world
(seed 0, default settings), with the seconds each took.

Usage: .venv/bin/python bench/mad_law_rollout.py [--repeats 3] [--table]"""

from __future__ import annotations

import argparse
import json
import statistics
import time

PAIR_ARRAYS = ("import numpy as np\n"
               "def pair_force(m_i, m_j, r_vec):\n"
               "    r_vec = np.asarray(r_vec, dtype=float)\n"
               "    r = np.sqrt(np.sum(r_vec**2, axis=-1))\n"
               "    return (np.asarray(m_i) * np.asarray(m_j) / r**{power})[..., None] * r_vec\n")
PAIR_ONE = ("import math\n"
            "def pair_force(m_i, m_j, r_vec):\n"
            "    r2 = sum(c * c for c in r_vec)\n"
            "    return [m_i * m_j * c / r2 for c in r_vec]\n")
ACCELERATION = ("def acceleration(force, mass, memory):\n"
                "    b = (20.0 / mass)[:, None, None] * memory + np.eye(force.shape[-1])\n"
                "    a = np.linalg.solve(b, force[..., None])[..., 0] / mass[:, None]\n"
                "    return a, -0.1 * memory + a[:, :, None] * a[:, None, :]\n")
BODY_FORCE = ("import numpy as np\ndef body_force(u, v, omega):\n"
              "    c = 5.0 * np.cos(np.pi / 16 * omega)\n    return [c * v, -c * u]\n")

OUTCOME = ("import numpy as np\ndef outcome_weight(amplitude):\n    return amplitude\n"
           "def initial_correlation(x1, y1, x2, y2):\n"
           "    return np.exp(-25.0 * ((x1 - x2)**2 + (y1 - y2)**2))\n")


def cases():
    from discoverygym.suites.mad.classical import ClassicalWorld
    from discoverygym.suites.mad.fluid_world import FluidWorld
    from discoverygym.suites.mad.quantum_world import QuantumWorld

    return {
        "classical inv-r, pair_force on arrays": (
            lambda: ClassicalWorld(seed=0, law="inv-r"), PAIR_ARRAYS.format(power=2)),
        "classical inv-r, pair_force one pair at a time": (
            lambda: ClassicalWorld(seed=0, law="inv-r"), PAIR_ONE),
        "classical kappa20, pair_force and acceleration on arrays": (
            lambda: ClassicalWorld(seed=0, law="kappa20"),
            PAIR_ARRAYS.format(power=3) + ACCELERATION),
        "fluid vort5, body_force on arrays": (
            lambda: FluidWorld(seed=0, law="vort5"), BODY_FORCE),
        "quantum combined, outcome_weight and initial_correlation": (
            lambda: QuantumWorld(seed=0, law="combined"), OUTCOME),
    }


def table() -> dict:
    """Law score of normal physics and of the true law, per world and law (seed 0)."""
    from discoverygym.core import get_suite
    from discoverygym.suites.mad.law_rollout import score_law_by_rollout
    from discoverygym.suites.mad.law_sources import normal_law_source, true_law_source
    from discoverygym.suites.mad.worlds import world_class

    out: dict = {}
    for world_name in ("classical", "fluid", "quantum"):
        for law in world_class(world_name).laws:
            world = get_suite("mad").episode(f"{world_name}-{law}", seed=0)._world
            row = {}
            for name, source in (("normal", normal_law_source(world_name)),
                                 ("true", true_law_source(world))):
                start = time.perf_counter()
                result = score_law_by_rollout(world, source)
                row[name] = {"score": round(result["score"], 6),
                             "error": result.get("error"),
                             "reference_error": result.get("reference_error"),
                             "reason": result.get("reason"),
                             "seconds": round(time.perf_counter() - start, 1)}
            out[f"{world_name}-{law}"] = row
            print(json.dumps({f"{world_name}-{law}": row}), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.table:
        print(json.dumps(table(), indent=2))
        return
    from discoverygym.suites.mad import constants as C
    from discoverygym.suites.mad import fluid_world as F
    from discoverygym.suites.mad import quantum_world as Q
    from discoverygym.suites.mad.law_rollout import score_law_by_rollout

    out: dict = {"repeats": args.repeats,
                 "classical": {"initial_states": C.LAW_SCORE_STATES,
                               "horizon": C.LAW_SCORE_HORIZON, "steps": int(
                                   C.LAW_SCORE_HORIZON / C.DT)},
                 "fluid": {"initial_states": F.LAW_SCORE_STATES,
                           "resolution": F.LAW_SCORE_RESOLUTION,
                           "horizon": F.LAW_SCORE_HORIZON,
                           "steps": int(F.LAW_SCORE_HORIZON / F.LAW_SCORE_DT)},
                 "quantum": {"initial_states": Q.LAW_SCORE_STATES,
                             "time_fractions": list(Q.LAW_SCORE_TIME_FRACTIONS)},
                 "cases": {}}
    for name, (make_world, source) in cases().items():
        totals, sandbox, scores = [], [], []
        for _ in range(args.repeats):
            world = make_world()
            start = time.perf_counter()
            result = score_law_by_rollout(world, source)
            totals.append(time.perf_counter() - start)
            sandbox.append(result.get("sandbox_s", float("nan")))
            scores.append(result["score"])
        out["cases"][name] = {"first_total_s": round(totals[0], 2),
                              "total_s": round(statistics.median(totals[1:] or totals), 2),
                              "sandbox_s": round(statistics.median(sandbox[1:] or sandbox), 2),
                              "score": scores[-1], "called": result.get("called"),
                              "reason": result.get("reason")}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
