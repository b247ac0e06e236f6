"""Scoring over attempts: avg@k, best@k, the TPBench grade point average, and the hook
for holistic grading of the written solution by a grader model.

Grade rule (`grade_points`, the only place it lives): with c correct of k attempts,
f = c / k; A (4 points) if f >= 4/5, B (3) if f >= 2/5, C (2) if f > 0, F (0) otherwise.
For k = 5 this is exactly the published table (4-5 correct A, 2-3 B, 1 C, 0 F); for
other k the same fractions apply (k = 1: A or F; k = 10: 8-10 A, 4-7 B, 1-3 C). The
GPA averages the points over problems with the level (1-5) as weight."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

GRADES = {"A": 4, "B": 3, "C": 2, "F": 0}


def grade_points(n_correct: int, k: int) -> tuple[str, int]:
    """(letter, points) for `n_correct` correct answers out of `k` attempts."""
    if k <= 0 or not 0 <= n_correct <= k:
        raise ValueError(f"need 0 <= n_correct <= k and k > 0, got {n_correct}/{k}")
    # integer comparisons avoid rounding at the 4/5 and 2/5 boundaries
    if 5 * n_correct >= 4 * k:
        return "A", 4
    if 5 * n_correct >= 2 * k:
        return "B", 3
    if n_correct > 0:
        return "C", 2
    return "F", 0


def per_problem(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """avg@k, best@k, grade per problem (keyed by task id) from episode records."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[r["task_id"]].append(r)
    out = {}
    for task, rs in sorted(groups.items()):
        k = len(rs)
        c = sum(bool(r.get("passed")) for r in rs)
        letter, points = grade_points(c, k)
        details = rs[0].get("details", {}) or {}
        verdicts: dict[str, int] = defaultdict(int)
        for r in rs:
            verdicts[(r.get("details") or {}).get("verdict", "no_answer")] += 1
        out[task] = {"level": details.get("level"), "domain": details.get("domain"),
                     "version": details.get("problem_version"), "k": k, "n_correct": c,
                     "avg_at_k": c / k, "best_at_k": float(c > 0), "grade": letter,
                     "points": points, "verdicts": dict(verdicts)}
    return out


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    weights = [int(r["level"] or 1) for r in rows]
    return {
        "n_problems": n,
        "avg_at_k": sum(r["avg_at_k"] for r in rows) / n if n else 0.0,
        "best_at_k": sum(r["best_at_k"] for r in rows) / n if n else 0.0,
        "gpa": (sum(w * r["points"] for w, r in zip(weights, rows, strict=True)) / sum(weights)
                if n else 0.0),
        "grades": {g: sum(r["grade"] == g for r in rows) for g in GRADES},
    }


def summarize_attempts(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The tpbench summary: overall, per level and per domain aggregates of avg@k,
    best@k and the level-weighted GPA, plus the per-problem table."""
    problems = per_problem(records)
    rows = list(problems.values())
    by_level: dict[str, list] = defaultdict(list)
    by_domain: dict[str, list] = defaultdict(list)
    for r in rows:
        by_level[str(r["level"])].append(r)
        by_domain[str(r["domain"])].append(r)
    verdicts: dict[str, int] = defaultdict(int)
    for r in rows:
        for v, n in r["verdicts"].items():
            verdicts[v] += n
    ks = sorted({r["k"] for r in rows})
    return {
        "overall": _aggregate(rows),
        "attempts_per_problem": ks[0] if len(ks) == 1 else ks,
        "per_level": {lv: _aggregate(rs) for lv, rs in sorted(by_level.items())},
        "per_domain": {d: _aggregate(rs) for d, rs in sorted(by_domain.items())},
        "verdicts": dict(verdicts),
        "per_problem": problems,
        "grade_rule": "f = correct/k: A(4) f>=4/5, B(3) f>=2/5, C(2) f>0, F(0); "
                      "GPA weighted by level",
    }


# ---- holistic grading hook -------------------------------------------------------------
HOLISTIC_GRADES = ("A", "B", "C", "D")

HOLISTIC_RUBRIC = """You grade a written solution to a theoretical-physics problem.
A: correct method and final answer, derivation complete. B: correct method, a minor slip
or gap. C: partly right method, significant errors. D: wrong or missing.
Compare with the expert solution; the automatic verification result is given too.
Reply with one letter (A, B, C or D) on the last line."""


def holistic_prompt(solution_text: str, *, statement: str, expert_solution: str,
                    verdict: str) -> str:
    """The text a grader model receives (used by `holistic_grade`)."""
    return (f"{HOLISTIC_RUBRIC}\n\n## Problem\n{statement}\n\n## Expert solution\n"
            f"{expert_solution}\n\n## Automatic verification\n{verdict}\n\n"
            f"## Solution to grade\n{solution_text}\n")


def holistic_grade(solution_text: str, *, statement: str, expert_solution: str,
                   verdict: str, grader: Callable[[str], str] | None = None) -> str | None:
    """Holistic grade A-D of a written solution, or None when no grader is configured.

    `grader` takes the grading prompt and returns the grader model's reply (e.g. a
    thin wrapper over an Inspect model role); the last standalone letter A-D in the
    reply is the grade. This is a second column beside the verdict, never the score."""
    if grader is None:
        return None
    return parse_holistic_grade(grader(holistic_prompt(
        solution_text, statement=statement, expert_solution=expert_solution,
        verdict=verdict)))


def parse_holistic_grade(reply: str | None) -> str | None:
    """The last standalone letter A-D in a grader's reply, or None."""
    letters = re.findall(r"\b([ABCD])\b", reply or "")
    return letters[-1] if letters else None
