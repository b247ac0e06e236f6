"""How fast `discoverygym run` refuses a mistyped command (issue 37, item 5).

Prints one JSON object: for each error path, the wall time of the whole command (a
fresh process, median of `--repeats` runs), its exit status and the heavy modules it
imported (JAX, REBOUND, SciPy, pandas, Inspect, ...); the same for `discoverygym list
--json` and `discoverygym --help` as the floor; and the machine's load average before
and after, so that figures taken while other work ran are labelled as such.

Usage: .venv/bin/python bench/run_errors.py [--repeats N]"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HEAVY = ("jax", "rebound", "inspect_ai", "scipy", "astropy", "pandas", "celerite2",
         "sympy", "duckdb", "ray", "matplotlib")

#: name -> command line after `discoverygym`
CASES = {
    "floor: --help": ["--help"],
    "floor: list --json": ["list", "--json"],
    "unknown suite": ["run", "gravty", "--agent", "expert-adaptive"],
    "neither --agent nor --model": ["run", "gravity"],
    "--workers -3": ["run", "gravity", "--agent", "expert-adaptive", "--workers", "-3"],
    "--grader-model without --model": ["run", "tpbench", "--agent", "reference",
                                       "--grader-model", "x/y"],
    "unknown agent (tpbench)": ["run", "tpbench", "--agent", "nobody"],
    "unknown option (tpbench)": ["run", "tpbench", "--agent", "reference", "--agnet", "x"],
    "unknown agent (gravity)": ["run", "gravity", "--agent", "nobody"],
    "unknown option (gravity)": ["run", "gravity", "--agent", "expert-adaptive",
                                 "--agnet", "x"],
    "unknown option (mad)": ["run", "mad", "--agent", "newtonian", "--agnet", "x"],
    "unknown agent (mad)": ["run", "mad", "--agent", "nobody"],
    "unknown agent (stargazer)": ["run", "stargazer", "--agent", "nobody"],
    "unknown option (stargazer)": ["run", "stargazer", "--agent", "classical", "--teir", "1"],
}

# Runs the command in-process and reports which heavy modules it imported.
PROBE = """
import sys, json
from discoverygym.cli import app
code = 0
try:
    app(sys.argv[1:], prog_name="discoverygym")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
heavy = [m for m in {heavy!r} if m in sys.modules]
print("\\n" + json.dumps({{"exit": code, "heavy": heavy}}))
"""


def one(args: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})
    wall = time.perf_counter() - start
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    ns = parser.parse_args()
    load_before = os.getloadavg()
    out: dict = {"cases": {}, "cpus": os.cpu_count()}
    for name, args in CASES.items():
        walls, info = [], {}
        for _ in range(ns.repeats):
            wall, info = one(args)
            walls.append(wall)
        out["cases"][name] = {"command": " ".join(["discoverygym", *args]),
                              "wall_s": round(statistics.median(walls), 3),
                              "exit": info["exit"], "heavy_imports": info["heavy"]}
    out["load_before"] = [round(x, 2) for x in load_before]
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
