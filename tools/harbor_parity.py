"""Parity of the Harbor export with `discoverygym run`: the same scripted agent, played
by the runner and replayed through an exported file task's own verifier (its answer
file and outputs, as solve.sh leaves them), gives the same verdict and score.

Prints one JSON object: per (suite, agent), the episodes, passes through the runner,
passes through the export, and how many episodes agree on verdict and score."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from discoverygym.core import get_suite
from discoverygym.doors.harbor import export_tasks
from discoverygym.run import run_episodes

# (suite, options, agents, episodes): oracles and the scripted experts or baselines.
CASES = [
    ("gravity", {"protocol": "full-obs"}, ["expert-adaptive", "expert-full"], 24),
    ("stargazer", {"tier": "easy"}, ["oracle", "classical"], 6),
    ("stargazer", {"tier": "medium"}, ["oracle", "classical"], 6),
    ("tpbench", {}, ["reference", "wrong-sign"], 20),
    ("packages", {}, ["oracle", "baseline"], 4),
]


def parity(suite: str, options: dict, agent: str, count: int, scratch: Path) -> dict:
    s = get_suite(suite)
    specs = s.episodes(**s.parse_options({k: str(v) for k, v in options.items()}))[:count]
    tag = "-".join([suite, agent, *map(str, options.values())])
    run_dir = scratch / f"run-{tag}"
    run_episodes(specs, out_dir=run_dir, agent=agent, executor="serial",
                 show_progress=False)
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    by_key = {(r["task_id"], r["seed"], json.dumps(r["options"], sort_keys=True)): r
              for r in records}
    started = time.perf_counter()
    tasks = export_tasks(suite, scratch / f"export-{tag}", specs=specs, oracle=agent)
    agree = run_passes = export_passes = 0
    for spec, task in zip(specs, tasks, strict=True):
        ran = next(r for k, r in by_key.items() if k[0] == spec.task_id and k[1] == spec.seed
                   and all(r["options"].get(o) == v for o, v in spec.options.items()))
        run_passes += bool(ran["passed"])
        export_passes += bool(task.oracle_passed)
        agree += (bool(ran["passed"]) == bool(task.oracle_passed)
                  and abs(ran["score"] - (task.oracle_score or 0.0)) < 1e-9)
    return {"suite": suite, "options": options, "agent": agent, "episodes": len(specs),
            "run_passed": run_passes, "export_passed": export_passes, "agree": agree,
            "export_s_per_task": round((time.perf_counter() - started) / len(specs), 2)}


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="dg-harbor-parity-") as tmp:
        for suite, options, agents, count in CASES:
            for agent in agents:
                rows.append(parity(suite, options, agent, count, Path(tmp)))
                print(json.dumps(rows[-1]), file=sys.stderr)
    print(json.dumps({"harbor_parity": rows}))


if __name__ == "__main__":
    main()
