"""Sandbox performance: interpreter start time, round-trip latency of a trivial
execution, workspace refresh time for a 10k-row DataFrame, and a trivial one-shot run
(`run_isolated`, what verifiers use). Prints one JSON object (medians over several
runs). `DISCOVERYGYM_SANDBOX_ISOLATION=LEVEL` measures another level."""

from __future__ import annotations

import json
import statistics
import time

import numpy as np
import pandas as pd

from discoverygym.sandbox import Interpreter, SandboxConfig, run_isolated


def main() -> None:
    config = SandboxConfig()
    level = run_isolated("pass", config=SandboxConfig(preload={})).isolation
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"time_s": np.arange(10_000, dtype=float),
                          "x_m": rng.normal(size=10_000), "y_m": rng.normal(size=10_000),
                          "z_m": rng.normal(size=10_000)})
    starts = []
    for _ in range(3):
        t0 = time.perf_counter()
        interp = Interpreter({"df": frame}, config)
        starts.append(time.perf_counter() - t0)
        interp.close()
    with Interpreter({}, config) as interp:
        for _ in range(20):  # warm up
            interp.execute("1 + 1")
        trips = []
        for _ in range(200):
            t0 = time.perf_counter()
            interp.execute("1 + 1")
            trips.append(time.perf_counter() - t0)
        refreshes = []
        for _ in range(10):
            t0 = time.perf_counter()
            interp.update_workspace({"df": frame})
            refreshes.append(time.perf_counter() - t0)
        check = interp.execute("len(df)").value
    oneshots = []
    for _ in range(10):
        t0 = time.perf_counter()
        run_isolated("pass", config=SandboxConfig(preload={}))
        oneshots.append(time.perf_counter() - t0)
    trips_ms = sorted(1000 * t for t in trips)
    print(json.dumps({
        "isolation": level,
        "interpreter_start_s": round(statistics.median(starts), 4),
        "trivial_exec_p50_ms": round(trips_ms[len(trips_ms) // 2], 3),
        "trivial_exec_p95_ms": round(trips_ms[int(0.95 * len(trips_ms))], 3),
        "workspace_refresh_10k_rows_ms": round(1000 * statistics.median(refreshes), 3),
        "refresh_check_rows": int(check),
        "oneshot_trivial_p50_ms": round(1000 * statistics.median(oneshots), 1),
    }))


if __name__ == "__main__":
    main()
