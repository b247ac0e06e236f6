"""What `bench/whole_platform.py --against REV` and `--keyed` need besides the timing
itself: another revision's source beside this tree, the environment that makes a run
use it and an empty cache, the median of alternating runs, and how two runs' records
differ.

A revision runs with this environment's interpreter and libraries and only its own
`src/` first on PYTHONPATH (an editable install's finder comes after PYTHONPATH), so a
ratio measures the code and not a change of NumPy or JAX."""

from __future__ import annotations

import io
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

# Two scores are the same within `discoverygym verify`'s tolerances (issue 37: "its
# score to 1e-9 relative"; the absolute floor for values that are zero but for rounding).
from discoverygym.run.verify import ABS_TOL, REL_TOL


def resolve(root: Path, rev: str) -> str:
    """The full commit id of `rev` in the repository at `root` (ValueError if none)."""
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet",
                           f"{rev}^{{commit}}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(f"--against {rev!r}: not a commit of {root}")
    return done.stdout.strip()


def side_tree(root: Path, commit: str, into: Path) -> Path:
    """`commit`'s src/ extracted under `into` (reused when already there); returns the
    folder to put first on PYTHONPATH."""
    dest = into / f"rev-{commit[:12]}"
    src = dest / "src"
    if (src / "discoverygym" / "__init__.py").exists():
        return src
    archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", commit,
                              "src"], capture_output=True, check=True).stdout
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return src


def run_env(src: Path | None, cache: Path) -> dict[str, str]:
    """Environment overrides for one run: `src` first on PYTHONPATH (None: this tree, as
    installed) and `cache` as the cache root."""
    env = {"DISCOVERYGYM_CACHE": str(cache)}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def imported_from(env: dict[str, str]) -> Path:
    """Where a process with `env` imports discoverygym from (the check that a side tree
    is the code that runs)."""
    done = subprocess.run([sys.executable, "-c",
                           "import discoverygym; print(discoverygym.__file__)"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, **env})
    return Path(done.stdout.strip()).resolve().parent.parent


def order(rounds: int) -> list[str]:
    """Which side runs when: this, rev, rev, this, ... (each side first as often as the
    other, so a machine that warms or cools during the session favours neither)."""
    pattern = ["this", "rev", "rev", "this"]
    return [pattern[i % 4] for i in range(2 * rounds)]


def median(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


def ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 3) if denominator > 0 else None


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _scalar_options(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (record.get("options") or {}).items()
            if isinstance(v, str | int | float | bool) or v is None}


def _same_case(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two records of one task and seed are the same case when their options agree on
    every key both have (a revision may add an option, as mad's variant field)."""
    oa, ob = _scalar_options(a), _scalar_options(b)
    return all(oa[k] == ob[k] for k in oa.keys() & ob.keys())


def _close(x: Any, y: Any) -> bool:
    if x is None or y is None:
        return x is y
    try:
        fx, fy = float(x), float(y)
    except (TypeError, ValueError):
        return x == y
    if math.isnan(fx) or math.isnan(fy):
        return math.isnan(fx) and math.isnan(fy)
    return math.isclose(fx, fy, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def compare_records(this: Path, rev: Path, examples: int = 5) -> dict[str, Any]:
    """How the records of two runs of one plan differ: the cases matched, those only one
    side has, and those whose `passed`, score or metric value differ (at `verify`'s
tolerances, as tools/compare_records.py compares)."""
    ours, theirs = _read(this), _read(rev)
    pool: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for record in theirs:
        pool.setdefault((record.get("task_id"), record.get("seed")), []).append(record)
    matched = unmatched = 0
    passed_differ: list[str] = []
    score_differ: list[str] = []
    for record in ours:
        candidates = pool.get((record.get("task_id"), record.get("seed")), [])
        other = next((c for c in candidates if _same_case(record, c)), None)
        if other is None:
            unmatched += 1
            continue
        candidates.remove(other)
        matched += 1
        case = f"{record.get('task_id')} seed {record.get('seed')} {_scalar_options(record)}"
        if bool(record.get("passed")) != bool(other.get("passed")):
            passed_differ.append(case)
        elif not (_close(record.get("score"), other.get("score"))
                  and _close(record.get("value"), other.get("value"))):
            score_differ.append(f"{case}: score {other.get('score')} -> "
                                f"{record.get('score')}")
    return {"matched": matched, "only_this": unmatched,
            "only_rev": sum(len(v) for v in pool.values()),
            "passed_differ": len(passed_differ), "score_differ": len(score_differ),
            "examples": (passed_differ + score_differ)[:examples]}
