"""Stargazer timings.

Prints one JSON object: task generation time per task (fresh seeds, uncached), the
evaluator's time per submission (both modes from one fit; also through the episode's
`submit`, validation included), and -- when discoverygym.suites.stargazer.baselines.agents provides them --
the `classical` and `nested` agents' median wall time per task by tier on a small sample
of the default bank and of the real tasks (with their pass rates on that sample, for
orientation only). The load average before and after is printed too: timings taken while
other work runs are not comparable with quiet-machine figures.

`--plan AGENT` instead plays the suite's whole default plan (120 episodes) with one
agent in this process, one episode after another, and prints the agent's CPU seconds
(`time.process_time` around `solve`, so episode set-up and scoring are left out; CPU
rather than wall time because the figure should not depend on what else the machine
runs) in total and per tier, with the pass counts; `--records FILE` also writes the
records (JSON lines) for tools/compare_records.py. Run it in a process with one BLAS
thread (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1), as the runner's workers do.

Usage: python bench/stargazer.py [--sample N] [--no-agents]
       python bench/stargazer.py --plan classical [--tasks ID,...] [--records FILE]"""

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
    from discoverygym.core import make_agent
    from discoverygym.suites.stargazer.baselines import AGENTS

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


def plan_cpu(agent_name: str, tasks: list[str] | None,
             records_path: str | None) -> dict[str, object]:
    """One agent over the default plan (or the named tasks of it): its CPU seconds in
    `solve`, in total and per tier, and the pass counts."""
    from discoverygym.core import make_agent
    from discoverygym.core.suite import plan_episodes

    suite = StargazerSuite()
    specs = plan_episodes(suite)
    if tasks:
        specs = [s for s in specs if s.task_id in set(tasks)]
    per_tier: dict[str, dict[str, float]] = {}
    lines = []
    for spec in specs:
        episode = suite.episode(spec.task_id, seed=spec.seed, **spec.options)
        agent = make_agent("stargazer", agent_name)
        start = time.process_time()
        agent.solve(episode.view())
        cpu_s = time.process_time() - start
        record = episode.record(agent=agent_name)
        tier = suite.load_task(spec.task_id, **spec.options).tier
        row = per_tier.setdefault(tier, {"episodes": 0, "passed": 0, "agent_cpu_s": 0.0})
        row["episodes"] += 1
        row["passed"] += bool(record.passed)
        row["agent_cpu_s"] += cpu_s
        lines.append(record.to_json())
    if records_path:
        with open(records_path, "w") as out:
            out.write("\n".join(lines) + "\n")
    return {"agent": agent_name, "episodes": len(specs),
            "agent_cpu_s": sum(r["agent_cpu_s"] for r in per_tier.values()),
            "passed": sum(r["passed"] for r in per_tier.values()), "per_tier": per_tier,
            "blas_threads_env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS",
                                                                "OPENBLAS_NUM_THREADS")}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=3, help="tasks per tier for the agents")
    parser.add_argument("--no-agents", action="store_true")
    parser.add_argument("--plan", metavar="AGENT",
                        help="CPU seconds of AGENT over the default plan, nothing else")
    parser.add_argument("--tasks", help="with --plan: only these task ids (comma-separated)")
    parser.add_argument("--records", help="with --plan: write the records (JSON lines) here")
    args = parser.parse_args()
    bank_task("easy-000")                       # build (or read) the bank first
    if args.plan:
        result = {"machine": platform.platform(), "cpus": os.cpu_count(),
                  "load_average_before": os.getloadavg(),
                  "plan": plan_cpu(args.plan, args.tasks.split(",") if args.tasks else None,
                                   args.records),
                  "load_average_after": os.getloadavg()}
        print(json.dumps(result, indent=1))
        return
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
