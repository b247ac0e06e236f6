"""Compare two runs record by record: the check that a change meant to be numerically
neutral (a faster solver, a leaner fit) changed no result.

    python tools/compare_records.py runs/before runs/after [--rel 1e-9] [--json FILE]

Records are paired by (suite, agent, model, task_id, seed, options). A pair agrees when
`passed`, `error`, `metric` and the usage counts (submissions, tool calls, observations)
are equal and `score` and `value` agree to `--rel` relative (1e-9: answers may move in
their last bits, results may not), with an absolute floor `--abs` (1e-12) for numbers
that are zero but for rounding (an exact forecast's error of 1e-16); the defaults are
`discoverygym verify`'s, so a comparison and a verification call the same numbers equal. The answers are compared too, but only reported:
each pair's largest relative difference of an answer number, and the pairs whose answers
differ in shape (another planet count, another key). Prints one JSON object (the counts,
the largest answer difference, every disagreement) and exits 1 when a pair disagrees or
a record is in one run only.

A run is a directory holding records.jsonl (what `discoverygym run --out DIR` writes) or
the records.jsonl file itself."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from discoverygym.run.verify import ABS_TOL, REL_TOL

USAGE_COUNTS = ("submissions", "tool_calls", "observations", "tool_errors")


def load(path: Path) -> dict[str, dict[str, Any]]:
    """Records of a run keyed by what identifies an episode (the last record of a key
    wins, as a resumed run's would)."""
    file = path / "records.jsonl" if path.is_dir() else path
    out = {}
    for line in file.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            out[episode_key(record)] = record
    return out


def episode_key(record: dict[str, Any]) -> str:
    return json.dumps([record.get(k) for k in ("suite", "agent", "model", "task_id", "seed",
                                               "options")], sort_keys=True)


def close(a: Any, b: Any, rel: float, abs_tol: float = ABS_TOL) -> bool:
    """Equal, or two numbers within `rel` relative or `abs_tol` absolute (NaN equals
    NaN)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not (
            isinstance(a, bool) or isinstance(b, bool)):
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)
    return a == b


def answer_difference(a: Any, b: Any) -> float:
    """Largest relative difference between the numbers of two answers of one shape;
    infinity when their shapes differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return math.inf
        return max((answer_difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf
        return max((answer_difference(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not (
            isinstance(a, bool) or isinstance(b, bool)):
        if a == b:
            return 0.0
        return abs(a - b) / max(abs(a), abs(b))
    return 0.0 if a == b else math.inf


def disagreements(before: dict[str, Any], after: dict[str, Any], rel: float,
                  abs_tol: float = ABS_TOL) -> list[str]:
    """What differs between two records of one episode beyond `rel` (empty: they agree)."""
    out = []
    for key in ("passed", "error", "metric"):
        if before.get(key) != after.get(key):
            out.append(f"{key}: {before.get(key)!r} -> {after.get(key)!r}")
    for key in ("score", "value"):
        if not close(before.get(key), after.get(key), rel, abs_tol):
            out.append(f"{key}: {before.get(key)!r} -> {after.get(key)!r}")
    for key in USAGE_COUNTS:
        a, b = before.get("usage", {}).get(key), after.get("usage", {}).get(key)
        if a != b:
            out.append(f"usage.{key}: {a!r} -> {b!r}")
    return out


def compare(before: dict[str, dict], after: dict[str, dict], rel: float,
            abs_tol: float = ABS_TOL) -> dict[str, Any]:
    """The comparison of two runs as one JSON-ready object."""
    common = sorted(set(before) & set(after))
    differing, shapes, largest = [], [], (0.0, None)
    for key in common:
        b, a = before[key], after[key]
        label = f"{b.get('task_id')} (seed {b.get('seed')})"
        problems = disagreements(b, a, rel, abs_tol)
        if problems:
            differing.append({"episode": label, "differences": problems})
        diff = answer_difference(b.get("answer"), a.get("answer"))
        if math.isinf(diff):
            shapes.append(label)
        elif diff > largest[0]:
            largest = (diff, label)
    return {
        "paired": len(common),
        "only_before": [json.loads(k) for k in sorted(set(before) - set(after))],
        "only_after": [json.loads(k) for k in sorted(set(after) - set(before))],
        "rel_tol": rel,
        "abs_tol": abs_tol,
        "agree": len(common) - len(differing),
        "disagree": differing,
        "passed_before": sum(bool(before[k].get("passed")) for k in common),
        "passed_after": sum(bool(after[k].get("passed")) for k in common),
        "answers_identical": sum(before[k].get("answer") == after[k].get("answer")
                                 for k in common),
        "answers_other_shape": shapes,
        "largest_answer_rel_difference": {"value": largest[0], "episode": largest[1]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rel", type=float, default=REL_TOL,
                        help=f"relative tolerance on score and value (default {REL_TOL:g})")
    parser.add_argument("--abs", type=float, default=ABS_TOL, dest="abs_tol",
                        help=f"absolute floor on score and value (default {ABS_TOL:g})")
    parser.add_argument("--json", type=Path, help="also write the result to this file")
    args = parser.parse_args(argv)
    result = compare(load(args.before), load(args.after), args.rel, args.abs_tol)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    ok = not (result["disagree"] or result["only_before"] or result["only_after"]
              or result["answers_other_shape"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
