"""Speed of the packages suite's evaluation server, over real HTTP on 127.0.0.1.

For each shipped package: the latency of `POST /evaluate` (p50 and p99 over
`--requests` sequential calls, the baseline's outputs in OUTPUT_DIR), which is
dominated by starting the evaluator in its own process. Then the server's throughput
with `--clients` concurrent clients sending `--requests` evaluations in all to one
package (evaluations of one run are serialised by design, so this measures how much
the server adds on top of back-to-back evaluator processes), and the throughput of
`GET /time_remaining` under the same concurrency (the server alone).

Each figure is the median of `--repeats` runs. Prints one JSON object.
Usage: python bench/packages.py [--requests 20] [--clients 8] [--repeats 3]"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from discoverygym.core import get_suite
from discoverygym.naturegym.format.package import CATALOG, find_packages, load_package
from discoverygym.suites.packages.server import BackgroundServer, create_app
from discoverygym.suites.packages.service import EvaluationService

TOKEN = "bench-token"


def baseline_outputs(case_id: str, target: Path) -> None:
    """Play the scripted baseline and keep the outputs it wrote (a realistic submission)."""
    from discoverygym.suites.packages.baselines.solvers import SOLVERS

    episode = get_suite("packages").episode(case_id)
    view = episode.view()
    ws = view.workspace()
    SOLVERS[ws["task_name"]](view, Path(ws["DATA_DIR"]), list(ws["instances"]))
    src = Path(ws["OUTPUT_DIR"])
    for path in src.rglob("*"):
        if path.is_file():
            dest = target / path.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(path.read_bytes())
    episode.record(agent="bench")


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def latency(client: httpx.Client, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        response = client.post("/evaluate")
        times.append(time.perf_counter() - start)
        response.raise_for_status()
    return times


def throughput(client: httpx.Client, method: str, path: str, n: int, clients: int) -> float:
    def one(_: int) -> None:
        client.request(method, path).raise_for_status()

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(n)))
    return n / (time.perf_counter() - start)


def bench_package(root: Path, requests: int, clients: int, repeats: int) -> dict:
    pkg = load_package(root)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        baseline_outputs(pkg.case_id, out)
        service = EvaluationService(pkg, out, Path(tmp) / "log.sqlite", total_s=1e9)
        with BackgroundServer(create_app(service, TOKEN)) as server:
            client = httpx.Client(base_url=server.url, timeout=600,
                                  headers={"Authorization": f"Bearer {TOKEN}"},
                                  limits=httpx.Limits(max_connections=clients))
            client.post("/evaluate").raise_for_status()  # warm the page cache
            p50, p99, evals, light = [], [], [], []
            for _ in range(repeats):
                times = latency(client, requests)
                p50.append(_percentile(times, 50))
                p99.append(_percentile(times, 99))
                evals.append(throughput(client, "POST", "/evaluate", requests, clients))
                light.append(throughput(client, "GET", "/time_remaining", 20 * requests,
                                        clients))
            client.close()
        service.close()
    return {"evaluate_latency_p50_s": statistics.median(p50),
            "evaluate_latency_p99_s": statistics.median(p99),
            "evaluate_throughput_per_s": statistics.median(evals),
            "time_remaining_throughput_per_s": statistics.median(light)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="One package id.")
    args = parser.parse_args()
    roots = [r for r in find_packages(CATALOG) if args.only in (None, r.name)]
    load_before = os.getloadavg()
    packages = {r.name: bench_package(r, args.requests, args.clients, args.repeats)
                for r in roots}
    result = {
        "bench": "packages", "requests": args.requests,
        "clients": args.clients, "repeats": args.repeats, "cpus": os.cpu_count(),
        "python": platform.python_version(), "machine": platform.machine(),
        # the load other processes put on the machine, so figures taken under load show it
        "load_1m_before": round(load_before[0], 2),
        "load_1m_after": round(os.getloadavg()[0], 2),
        "packages": packages,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
