"""Gravity suite performance.

Prints one JSON object:
- the time to build all 16 published worlds cold (REBOUND runs into an empty cache)
  and warm (loaded from the disk cache by a fresh process), median of a few runs;
- the latency of the `observe` tool (one time per call, and ten per call), p50/p99 in
  microseconds, through `Episode.call` (validation, interpolation, bookkeeping);
- if the scripted agent `expert-uniform` exists: the wall time and pass rate of the
  full 206-pair budget-obs-100 run through `discoverygym.run.run_episodes` (process
  executor, 2 workers, warm cache), median of a few runs;
- the machine's CPU count and its load average before and after, so that figures
  taken while other work ran are labelled as such.

With `--observe-only`: only the `observe` latency (one time per call), split by what
the call checks: the whole call; without the bounds check on the arguments (depth, size,
finite numbers: the defence against hostile input); without any argument check (bounds
and JSON-Schema validation): the tool alone. p50 of wall time and of the thread's CPU
time per call (the CPU figure is the one to read on a loaded machine).

Usage: .venv/bin/python bench/gravity.py [--repeats N] [--skip-run] [--observe-only]"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD_ALL = """
import json, time
start = time.perf_counter()
from discoverygym.suites.gravity.simulate import trajectory
from discoverygym.suites.gravity.worlds import PUBLISHED_WORLDS
imported = time.perf_counter()
rows = sum(len(trajectory(w).times_s) for w in PUBLISHED_WORLDS.values())
print(json.dumps({"seconds": time.perf_counter() - imported, "import_s": imported - start,
                  "rows": rows}))
"""


def _build_all_worlds(cache: str) -> dict:
    """Build every published world in a new process (so no in-process memo helps)."""
    env = dict(os.environ, DISCOVERYGYM_CACHE=cache)
    out = subprocess.run([sys.executable, "-c", BUILD_ALL], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _observe_latency_us(n_calls: int, per_call: int, checks: str = "all") -> dict[str, float]:
    """p50/p99 of `observe` through `Episode.call`; `checks` "all", "schema" (the bounds
    check switched off) or "none" (no argument check: the tool alone), to show what each
    check costs. Switching a check off is for this measurement only."""
    import contextlib
    from unittest import mock

    import discoverygym.core.episode as episode_module
    import discoverygym.core.tools as tools_module

    with contextlib.ExitStack() as stack:
        if checks in ("schema", "none"):
            stack.enter_context(mock.patch.object(tools_module, "check_value",
                                                  lambda *a, **k: None))
        if checks == "none":
            stack.enter_context(mock.patch.object(episode_module, "validate_arguments",
                                                  lambda spec, args: dict(args)))
        return _observe_latency(n_calls, per_call)


def _observe_latency(n_calls: int, per_call: int) -> dict[str, float]:
    import numpy as np

    from discoverygym.core import get_suite

    episode = get_suite("gravity").episode("period", world="ELL",
                                           protocol=f"budget-obs-{n_calls * per_call}")
    view = episode.view()
    end = view.workspace()["window"][1]
    rng = np.random.default_rng(0)
    latencies, cpu = [], []
    for _ in range(n_calls):
        times = [float(t) for t in rng.uniform(0.0, end, per_call)]
        start, start_cpu = time.perf_counter(), time.thread_time()
        result = view.call("observe", {"times": times})
        cpu.append((time.thread_time() - start_cpu) * 1e6)
        latencies.append((time.perf_counter() - start) * 1e6)
        assert not result.is_error, result.text
    values = np.array(latencies)
    return {"p50_us": round(float(np.percentile(values, 50)), 1),
            "p99_us": round(float(np.percentile(values, 99)), 1),
            "cpu_p50_us": round(float(np.percentile(cpu, 50)), 1), "calls": n_calls}


def _full_run(repeats: int) -> dict:
    from discoverygym.core import agent_table, get_suite
    from discoverygym.run import run_episodes

    if "expert-uniform" not in agent_table("gravity"):
        return {"skipped": "no expert-uniform agent in discoverygym.suites.gravity.baselines.expert"}
    specs = get_suite("gravity").episodes(protocol="budget-obs-100")
    walls, summary = [], {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            result = run_episodes(specs, out_dir=Path(out), agent="expert-uniform",
                                  executor="process", workers=2, show_progress=False)
            walls.append(time.perf_counter() - start)
            summary = result.summary
    return {"agent": "expert-uniform", "protocol": "budget-obs-100", "episodes": len(specs),
            "executor": "process", "workers": 2, "wall_s": round(statistics.median(walls), 2),
            "wall_s_runs": [round(w, 2) for w in walls], "target_s": 60.0,
            "passed": summary.get("n_passed"), "pass_rate": summary.get("pass_rate")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-run", action="store_true", help="skip the 206-episode run")
    parser.add_argument("--observe-only", action="store_true",
                        help="only the observe latency, split by the checks it runs")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    if args.observe_only:
        _observe_latency_us(200, 1)  # warm: imports, the world's cache, the validator
        result = {"suite": "gravity", "observe_1_time_per_call": {
            checks: _observe_latency_us(2000, 1, checks) for checks in ("all", "schema", "none")}}
        result["machine"] = {"cpus": os.cpu_count(), "load_1m_before": round(load_before, 2),
                             "load_1m_after": round(os.getloadavg()[0], 2)}
        print(json.dumps(result, indent=2))
        return

    cold, warm, imports, rows = [], [], [], 0
    with tempfile.TemporaryDirectory() as warm_cache:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as empty:
                cold.append(_build_all_worlds(empty)["seconds"])
        _build_all_worlds(warm_cache)  # fill the cache the warm runs read
        for _ in range(args.repeats):
            built = _build_all_worlds(warm_cache)
            warm.append(built["seconds"])
            imports.append(built["import_s"])
            rows = built["rows"]
        # everything below reads (and the worker processes inherit) the warm cache
        os.environ["DISCOVERYGYM_CACHE"] = warm_cache
        result = {
            "suite": "gravity",
            "worlds": 16,
            "dense_rows_total": rows,
            "build_all_worlds_cold_s": round(statistics.median(cold), 2),
            "build_all_worlds_warm_s": round(statistics.median(warm), 3),
            "import_package_s": round(statistics.median(imports), 2),
            "note_build": "a new process each time; the import is timed separately",
            "observe_1_time_per_call": _observe_latency_us(2000, 1),
            "observe_10_times_per_call": _observe_latency_us(500, 10),
            "observe_p50_target_us": 1000.0,
        }
        if not args.skip_run:
            result["full_run"] = _full_run(args.repeats)
    cpus = os.cpu_count() or 1
    load_after = os.getloadavg()[0]
    result["machine"] = {
        "cpus": cpus, "load_1m_before": round(load_before, 2),
        "load_1m_after": round(load_after, 2),
        # Load from other processes slows every figure above; flag it rather than hide it.
        "under_load": max(load_before, load_after) > 0.5 * cpus,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
