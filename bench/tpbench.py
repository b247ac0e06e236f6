"""tpbench verification time per answer, isolation included: every shipped problem's
reference solution and plausible wrong answer verified `--repeats` times with the
reference outputs cached (the steady state of a run), plus the one-off cost of
computing a problem's reference outputs. Prints one JSON object (medians and
percentiles in seconds)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    # a private cache so the first pass measures the reference computation honestly
    os.environ["DISCOVERYGYM_CACHE"] = tempfile.mkdtemp(prefix="tpbench-bench-")

    from discoverygym.sandbox import isolation_level
    from discoverygym.suites.tpbench.problem import builtin_problem_dir, load_problems
    from discoverygym.suites.tpbench.verifier import reference_outputs, verify

    problems = load_problems(builtin_problem_dir())
    reference_s = []
    for problem in problems:
        t0 = time.perf_counter()
        reference_outputs(problem)
        reference_s.append(time.perf_counter() - t0)
    answers = [(p, p.reference_solution_text(), "correct") for p in problems] + \
              [(p, p.wrong_solution_text(), "wrong") for p in problems]
    per_answer = []
    mismatches = 0
    n_tests = []
    for _ in range(args.repeats):
        for problem, text, expected in answers:
            t0 = time.perf_counter()
            result = verify(problem, text)
            per_answer.append(time.perf_counter() - t0)
            n_tests.append(result.n_tests)
            mismatches += (result.verdict == "correct") != (expected == "correct")
    print(json.dumps({
        "isolation": isolation_level(),
        "n_problems": len(problems),
        "n_verifications": len(per_answer),
        "tests_per_answer_median": statistics.median(n_tests),
        "verify_p50_s": round(statistics.median(per_answer), 4),
        "verify_p90_s": round(_percentile(per_answer, 0.9), 4),
        "verify_max_s": round(max(per_answer), 4),
        "reference_outputs_p50_s": round(statistics.median(reference_s), 4),
        "target_p50_s": 0.5,
        "verdict_mismatches": mismatches,
    }))


if __name__ == "__main__":
    main()
