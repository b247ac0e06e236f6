"""Stargazer timings.

Prints one JSON object: task generation time per task (fresh seeds, uncached), the
evaluator's time per submission (both modes from one fit; also through the episode's
`submit`, validation included), and -- when discoverygym.suites.stargazer.baselines.agents provides them --
the `classical` and `nested` agents' median wall time per task by tier on a small sample
of the default bank and of the real tasks (with their pass rates on that sample, for
orientation only). The load average before and after is printed too: timings taken while
other work runs are not comparable with quiet-machine figures.

Usage: python bench/stargazer.py [--sample N] [--no-agents]"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

from discoverygym.suites.stargazer import StargazerSuite
from discoverygym.suites.stargazer.bank import bank_task
from discoverygym.suites.stargazer.generator import generate_task
from discoverygym.suites.stargazer.real import REAL_IDS
from discoverygym.suites.stargazer.scoring import evaluate

GENERATION_SEEDS = range(900_000, 900_012)
EVAL_TASKS = ("easy-000", "medium-000", "medium-001", "hard-000", "hard-001")
EVAL_REPEATS = 200


def generation_times() -> dict[str, float]:
    times = []
    for seed in GENERATION_SEEDS:
        start = time.perf_counter()
        generate_task(seed)
        times.append(time.perf_counter() - start)
    return {"median_s": statistics.median(times), "max_s": max(times), "n_tasks": len(times)}


def evaluator_times() -> dict[str, float]:
    direct, via_submit = [], []
    rng = np.random.default_rng(0)
    suite = StargazerSuite()
    for task_id in EVAL_TASKS:
        task = bank_task(task_id)
        ctx = task.context()
        guess = task.truth * rng.normal(1.0, 0.01, task.truth.shape)
        for _ in range(EVAL_REPEATS):
            start = time.perf_counter()
            evaluate(ctx, guess, task.truth_jitter_ms)
            direct.append(time.perf_counter() - start)
        args = {"planets": [dict(zip(("P_days", "K_ms", "e", "omega_rad", "l_rad"),
                                     map(float, row), strict=True)) for row in guess]}
        for _ in range(20):
            ep = suite.episode(task_id)
            start = time.perf_counter()
            ep.call("submit", args)
            via_submit.append(time.perf_counter() - start)
    return {"median_ms": 1e3 * statistics.median(direct),
            "p95_ms": 1e3 * float(np.percentile(direct, 95)),
            "submit_tool_median_ms": 1e3 * statistics.median(via_submit),
            "target_ms": 10.0}


def agent_times(sample: int) -> dict[str, object]:
    try:
        from discoverygym.suites.stargazer.baselines.agents import AGENTS
    except ImportError:
        return {"skipped": "discoverygym.suites.stargazer.baselines.agents is not available"}
    from discoverygym.core import make_agent

    suite = StargazerSuite()
    out: dict[str, object] = {}
    for name in ("classical", "nested"):
        if name not in AGENTS:
            out[name] = "not provided"
            continue
        per_tier = {}
        for tier, n in (("easy", 20), ("medium", 40), ("hard", 40), ("real", len(REAL_IDS))):
            ids = [f"{tier}-{k:03d}" if tier != "real" else REAL_IDS[k]
                   for k in np.linspace(0, n - 1, sample).astype(int)]
            times, passed = [], 0
            for task_id in ids:
                ep = suite.episode(task_id)
                agent = make_agent("stargazer", name)
                start = time.perf_counter()
                agent.solve(ep.view())
                times.append(time.perf_counter() - start)
                passed += bool(ep.record(agent=name).passed)
            per_tier[tier] = {"median_s": statistics.median(times), "n": len(ids),
                              "v2_passed": passed}
        out[name] = per_tier
    out["target_classical_median_s"] = 5.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=3, help="tasks per tier for the agents")
    parser.add_argument("--no-agents", action="store_true")
    args = parser.parse_args()
    bank_task("easy-000")                       # build (or read) the bank first
    result = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "generation_per_task": generation_times(),
        "evaluator_per_submission": evaluator_times(),
    }
    if not args.no_agents:
        result["agents_per_task"] = agent_times(args.sample)
    result["load_average_after"] = os.getloadavg()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
