"""Run a package's hidden evaluator in its own process.

The evaluator (`evaluation/evaluator.py`, defining `run_evaluation()` or `main()`) reads
the agent's files from OUTPUT_DIR. It runs with a time and memory cap; its JSON result
is read from stdout after a marker line. A crash, a timeout or unreadable output is an
evaluation error, never a score."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.bounded import UnsafeInput, loads
from .package import Package
from .scoring import FAILED_G, instance_g, task_score

MARKER = "===DISCOVERYGYM-EVALUATION-RESULT==="

# The limits are set by the child itself, first thing: a `preexec_fn` would run Python
# between fork and exec, which can deadlock when the parent has threads (JAX, servers).
_WRAPPER = f"""
import importlib.util, json, math, resource, sys
memory, cpu = int(sys.argv[2]), int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
spec = importlib.util.spec_from_file_location("evaluator", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
fn = getattr(module, "run_evaluation", None) or getattr(module, "main", None)
if fn is None:
    raise SystemExit("evaluator.py defines neither run_evaluation() nor main()")
result = fn()
def clean(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {{str(k): clean(v) for k, v in x.items()}}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if hasattr(x, "item"):
        return clean(x.item())
    return x
print("{MARKER}")
print(json.dumps(clean(result)))
"""


@dataclass
class Evaluation:
    """One evaluation of an output directory."""

    ok: bool
    raw: dict[str, Any] = field(default_factory=dict)  # the evaluator's per-instance dict
    g: dict[str, float] = field(default_factory=dict)  # per scored instance
    score: float = FAILED_G
    error: str | None = None
    skipped: list[str] = field(default_factory=list)  # instances without a usable SOTA
    duration_s: float = 0.0


def run_evaluator(package: Package, output_dir: Path, *, timeout_s: float = 300.0,
                  memory_mb: int = 4096, split: str | None = None,
                  python: str | os.PathLike[str] | None = None) -> Evaluation:
    """Evaluate `output_dir` with the package's evaluator and score it against SOTA (the
    instances of one split, when given), under `python` (the package's own environment,
    see environment.py; default: discoverygym's interpreter)."""
    start = time.perf_counter()
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")}
    env["OUTPUT_DIR"] = str(Path(output_dir).resolve())
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        proc = subprocess.run(
            [str(python or sys.executable), "-c", _WRAPPER, str(package.evaluator),
             str(memory_mb * 1024 * 1024), str(int(timeout_s) + 1)],
            cwd=package.evaluation_dir, env=env, capture_output=True, text=True,
            timeout=timeout_s, start_new_session=True)
    except subprocess.TimeoutExpired:
        return Evaluation(ok=False, error=f"evaluator timed out after {timeout_s:g} s",
                          duration_s=time.perf_counter() - start)
    duration = time.perf_counter() - start
    if proc.returncode != 0 or MARKER not in proc.stdout:
        # The agent reads this message: no host path of the package (its ground truth).
        tail = (proc.stderr or proc.stdout)[-2000:].replace(str(package.root), "<package>")
        return Evaluation(ok=False, duration_s=duration,
                          error=f"evaluator failed (exit {proc.returncode}): {tail.strip()}")
    try:
        raw = loads(proc.stdout.rsplit(MARKER, 1)[1].strip().splitlines()[0])
    except (IndexError, UnsafeInput) as exc:
        return Evaluation(ok=False, error=f"evaluator output unreadable: {exc}",
                          duration_s=duration)
    if not isinstance(raw, dict):
        return Evaluation(ok=False, error="evaluator returned a non-dict result",
                          duration_s=duration)
    return score_raw(package, raw, duration, split=split)


MAX_METRIC_DEPTH = 32


def _metric_key(name: str) -> str:
    return name.lower().replace("_", "").replace(" ", "").replace("-", "")


def find_metric(block: Any, metric: str) -> float | None:
    """The metric's value in one instance's result, found as NatureBench's service
    finds it: a key equal to the metric name up to case, "_", "-" and spaces, whose
    value is a number (not a bool), at this level first, then in nested dicts in order.
    A non-finite value is None (a failed instance)."""
    target = _metric_key(metric)

    def search(obj: Any, depth: int) -> float | None:
        if not isinstance(obj, dict) or depth > MAX_METRIC_DEPTH:
            return None
        for key, value in obj.items():
            if _metric_key(str(key)) == target and isinstance(value, int | float) \
                    and not isinstance(value, bool):
                return float(value)
        for value in obj.values():
            if isinstance(value, dict):
                found = search(value, depth + 1)
                if found is not None:
                    return found
        return None

    value = search(block, 0)
    return value if value is not None and math.isfinite(value) else None


def score_raw(package: Package, raw: dict[str, Any], duration_s: float = 0.0, *,
              split: str | None = None) -> Evaluation:
    """g per scored instance from an evaluator result (of one split, when given: the
    other split's results are dropped); failed or missing → −1."""
    g: dict[str, float] = {}
    skipped = []
    instances = [i for i in package.instances if split is None or i.split == split]
    raw = {name: raw[name] for name in (i.name for i in instances) if name in raw} \
        if split is not None else raw
    for inst in instances:
        if inst.sota in (None, 0.0):
            skipped.append(inst.name)
            continue
        g[inst.name] = instance_g(find_metric(raw.get(inst.name), inst.metric), inst.sota,
                                  inst.direction)
    return Evaluation(ok=True, raw=raw, g=g, score=task_score(g.values()), skipped=skipped,
                      duration_s=duration_s)
