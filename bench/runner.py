"""Runner throughput and overhead.

Prints JSON: episodes per second for a fast suite under each executor (serial,
process, ray), and the runner's own per-episode overhead (a serial run minus the
same episodes played directly, divided by their number). Median of several runs."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import toy_suite  # noqa: E402
from discoverygym.core import get_suite  # noqa: E402
from discoverygym.run import run_episodes  # noqa: E402

toy_suite.install()
REPEATS = 3


def direct(specs) -> float:
    suite = get_suite("toy")
    start = time.perf_counter()
    for s in specs:
        ep = suite.episode(s.task_id, seed=s.seed, **s.options)
        toy_suite.Bisect().solve(ep.view())
        ep.record(agent="bisect").to_json()
    return time.perf_counter() - start


def through_runner(specs, executor: str, workers: int = 2) -> float:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_episodes(specs, out_dir=Path(out), agent="bisect", executor=executor,
                     workers=workers, show_progress=False)
        return time.perf_counter() - start


def main() -> None:
    suite = get_suite("toy")
    specs = suite.episodes(range(300))
    serial = [through_runner(specs, "serial") for _ in range(REPEATS)]
    plain = [direct(specs) for _ in range(REPEATS)]
    overhead_ms = (statistics.median(serial) - statistics.median(plain)) / len(specs) * 1e3
    result = {
        "suite": "toy (tests/toy_suite.py: a bisection game, microseconds of physics)",
        "n_episodes": len(specs),
        "runner_overhead_ms_per_episode": round(overhead_ms, 3),
        "overhead_target_ms": 5.0,
        "episodes_per_s": {"serial": round(len(specs) / statistics.median(serial), 1)},
    }
    for executor in ("process", "ray"):
        try:
            times = [through_runner(specs, executor) for _ in range(REPEATS)]
            result["episodes_per_s"][executor] = round(len(specs) / statistics.median(times), 1)
        except Exception as exc:  # ray may be unavailable on a host
            result["episodes_per_s"][executor] = f"unavailable: {type(exc).__name__}: {exc}"
    result["note"] = ("process and ray include pool/cluster start-up; with microsecond episodes "
                      "they measure fixed costs, not scaling")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
