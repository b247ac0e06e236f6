"""Benchmark of the mad suite's classical world (JAX on CPU). Prints one JSON object:

- compile time of the jitted integrator (first call minus a warm call of the same size),
- simulated steps per second for N = 3 and N = 10 spheres in 3D (median of several runs
  of 100 000 steps; target >= 1e5 steps/s for N = 3),
- the wall time to integrate and cache one full trajectory (T_max = 300 plus the query
  horizon, snapshots every 1000 steps),
- the wall time of one episode of each baseline at the paper's T_max = 300 on a cached
  trajectory (median over seeds), and their median prediction error (nRMSE) under the
  normal law, as a sanity figure.

Usage: .venv/bin/python bench/mad_classical.py [--repeats 5] [--seeds 5]"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time


def steps_per_second(n_particles: int, repeats: int, n_steps: int = 100_000) -> dict:
    from discoverygym.suites.mad import classical_physics as P
    from discoverygym.suites.mad.classical import sample_initial_state

    init = sample_initial_state(0, n_particles, 3)
    integrator = P.Integrator(P.build_law("normal"))
    with P.x64():
        state = P.as_state(init.x, init.v)
        bodies = P.as_bodies(init.mass, init.radius)
        start = time.perf_counter()
        integrator.advance(state, bodies, 1000).x.block_until_ready()
        first_s = time.perf_counter() - start
        start = time.perf_counter()
        integrator.advance(state, bodies, 1000).x.block_until_ready()
        warm_s = time.perf_counter() - start
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            integrator.advance(state, bodies, n_steps).x.block_until_ready()
            rates.append(n_steps / (time.perf_counter() - start))
    return {"compile_s": first_s - warm_s, "steps_per_s": statistics.median(rates)}


def episode_times(n_seeds: int) -> dict:
    from discoverygym.core import get_suite, make_agent
    from discoverygym.suites.mad import constants as C
    from discoverygym.suites.mad.classical import get_trajectory

    suite = get_suite("mad")
    integrate_s = []
    for seed in range(n_seeds):
        start = time.perf_counter()
        get_trajectory(seed, "normal", 3, 3, C.INERTIA_DECAY_RATE, C.T_MAX + C.QUERY_HORIZON)
        integrate_s.append(time.perf_counter() - start)
    out: dict = {"trajectory_integration_s": statistics.median(integrate_s[1:] or integrate_s)}
    for agent in ("last-seen", "ballistic", "newtonian"):
        walls, errors = [], []
        for seed in range(n_seeds):
            start = time.perf_counter()
            episode = suite.episode("classical-normal", seed=seed)
            make_agent("mad", agent).solve(episode.view())
            record = episode.record(agent=agent)
            walls.append(time.perf_counter() - start)
            errors.append(record.value)
        # The first newtonian episode compiles its own integrator: report the median.
        out[agent] = {"episode_wall_s": statistics.median(walls),
                      "median_nrmse_normal": statistics.median(errors)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    # A private cache, so the trajectory timings include the integration.
    os.environ["DISCOVERYGYM_CACHE"] = tempfile.mkdtemp(prefix="dg-bench-mad-")
    import jax

    result = {"bench": "mad_classical", "device": jax.devices()[0].platform,
              "dim": 3, "dt": 1e-3, "t_max": 300.0}
    for n in (3, 10):
        result[f"n{n}"] = steps_per_second(n, args.repeats)
    result["compile_s"] = result["n3"]["compile_s"]
    result["target_steps_per_s_n3"] = 1e5
    result["meets_target"] = result["n3"]["steps_per_s"] >= 1e5
    result["episodes"] = episode_times(args.seeds)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
