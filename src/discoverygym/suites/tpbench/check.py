"""`discoverygym tpbench check`: validate problem files and test each one against itself.

Per problem: the file loads; the reference passes its own test plan; every argument
varies across the tests; the **independent check** (code that computes the answer by
another route) agrees with the reference on every test input within its tolerance; and
**every wrong answer** is rejected by the real verifier (one that passes means the test
inputs cannot see that slip). For each wrong answer the report gives the smallest
relative difference from the reference over the test inputs: how visible the slip is.

Problem files may come from users, so the check's code and the wrong answers are run
exactly as answers are: in isolated, limited processes, all inputs of one function in
one process (`verifier.run_function`), never in the host process."""

from __future__ import annotations

import math
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...core.escape import for_markdown
from .compare import relative_difference
from .execute import hide_directory
from .problem import DOMAINS, Problem, ProblemError, load_problem, problem_files
from .verifier import (
    ReferenceError_,
    compare_outputs,
    reference_outputs,
    run_function,
    verify,
)

#: Wall-clock limit of one independent check over all test inputs together (the format
#: asks for a few seconds; the margin absorbs a loaded machine).
CHECK_TIME_LIMIT_S = 60.0
CHECK_MEMORY_MB = 2048
#: Wrong answers a problem of each level should carry (fewer is a warning; --strict
#: makes it a failure).
MIN_WRONG_ANSWERS = {1: 1, 2: 1, 3: 3, 4: 3, 5: 3}


@dataclass
class WrongAnswerCheck:
    """One wrong answer through the verifier: it must not be `correct`.
    `min_rel_diff` / `max_rel_diff` = min / max over the test inputs of
    |wrong - reference| / |reference| (None when the answer produced no comparable
    output). The minimum is 0 where the plan includes a limit in which the slip is
    harmless; `n_rejecting` counts the inputs on which the verifier catches it."""

    explanation: str
    verdict: str
    n_tests: int = 0
    n_rejecting: int = 0
    min_rel_diff: float | None = None
    max_rel_diff: float | None = None
    rejected: bool = True


@dataclass
class IndependentCheckResult:
    """The independent check against the reference on every test input."""

    method: str
    rtol: float
    atol: float
    agreed: bool = False
    n_agree: int = 0
    max_rel_diff: float | None = None
    first_disagreement: str = ""
    error: str | None = None
    duration_s: float = 0.0


@dataclass
class ProblemCheck:
    """The outcome for one file: `ok` when it loads, the reference passes its tests,
    every argument varies, the independent check agrees and every wrong answer fails."""

    file: str
    id: str | None = None
    version: int | None = None
    level: int | None = None
    domain: str | None = None
    ok: bool = False
    n_tests: int = 0
    reference_verdict: str | None = None
    independent_check: IndependentCheckResult | None = None
    wrong_answers: list[WrongAnswerCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    duration_s: float = 0.0


def _finite(x: float) -> float | None:
    return None if x is None or math.isnan(x) else x  # JSON has no NaN; inf prints


def _run_independent(problem: Problem, inputs: list, expected: list) -> IndependentCheckResult:
    check = problem.independent_check
    assert check is not None
    result = IndependentCheckResult(check.method, check.rtol, check.atol)
    outcome = run_function(check.code, problem.function, inputs,
                           time_limit_s=CHECK_TIME_LIMIT_S, memory_mb=CHECK_MEMORY_MB)
    result.duration_s = round(outcome.duration_s, 3)
    if outcome.failure:
        result.error = f"{outcome.failure}: {outcome.message}"[:1000]
        return result
    names = [a.name for a in problem.arguments]
    tests = compare_outputs(inputs, names, expected, outcome.results, rtol=check.rtol,
                            atol=check.atol)
    result.n_agree = sum(t.passed for t in tests)
    result.agreed = result.n_agree == len(tests)
    diffs = [relative_difference(val, exp) for (kind, val), exp
             in zip(outcome.results, expected, strict=True) if kind == "ok"]
    result.max_rel_diff = _finite(max(diffs, default=math.nan))
    bad = next((t for t in tests if not t.passed), None)
    if bad is not None:
        args = ", ".join(f"{k}={v!r}" for k, v in bad.args.items())
        result.first_disagreement = f"{bad.label} ({args}): {bad.message}"[:1000]
    return result


def _run_wrong(problem: Problem, index: int, expected: list) -> WrongAnswerCheck:
    wrong = problem.wrong_answers[index]
    verification = verify(problem, problem.wrong_solution_text(index))
    diffs = [relative_difference(val, exp) for (kind, val), exp
             in zip(verification.outputs or [], expected, strict=False) if kind == "ok"]
    return WrongAnswerCheck(wrong.explanation, verification.verdict,
                            n_tests=verification.n_tests,
                            n_rejecting=verification.n_tests - verification.n_passed,
                            min_rel_diff=_finite(min(diffs, default=math.nan)),
                            max_rel_diff=_finite(max(diffs, default=math.nan)),
                            rejected=not verification.correct)


def check_problem(problem: Problem, file: str = "", *, independent: bool = True,
                  strict: bool = False) -> ProblemCheck:
    """Check one loaded problem (see the module docstring for what is checked).
    `independent=False` skips the independent check; `strict` turns warnings (no
    independent check, too few wrong answers) into failures."""
    start = time.perf_counter()
    result = ProblemCheck(file=file or problem.source, id=problem.id,
                          version=problem.version, level=problem.level,
                          domain=problem.domain)
    try:
        inputs, expected = reference_outputs(problem)
    except (ReferenceError_, ValueError) as exc:
        result.problems.append(str(exc))
        return result
    result.n_tests = len(inputs)
    for i, arg in enumerate(problem.arguments):
        if len({repr(inp.args[i]) for inp in inputs}) < 2:
            result.problems.append(f"argument '{arg.name}' never varies across the tests: an "
                                   "answer that ignores it cannot be caught")
    ref = verify(problem, problem.reference_solution_text())
    result.reference_verdict = ref.verdict
    if not ref.correct:
        failed = [t for t in ref.tests if not t.passed][:1]
        result.problems.append(f"reference is not reproducible: {ref.verdict} "
                               f"{ref.error or (failed[0].message if failed else '')}")
    if problem.independent_check is None:
        result.warnings.append("no independent_check: the reference is not checked by a "
                               "second route")
    elif independent:
        ind = _run_independent(problem, inputs, expected)
        result.independent_check = ind
        if ind.error:
            result.problems.append(f"independent check failed to run: {ind.error}")
        elif not ind.agreed:
            result.problems.append(
                f"independent check disagrees with the reference beyond rtol={ind.rtol:g}, "
                f"atol={ind.atol:g} on {len(inputs) - ind.n_agree} of {len(inputs)} tests; "
                f"first: {ind.first_disagreement}")
    for i in range(len(problem.wrong_answers)):
        wrong = _run_wrong(problem, i, expected)
        result.wrong_answers.append(wrong)
        if not wrong.rejected:
            result.problems.append(f"wrong answer {i} ({wrong.explanation}) passes every "
                                   "test: the test inputs do not see this slip")
    need = MIN_WRONG_ANSWERS.get(problem.level, 1)
    if len(problem.wrong_answers) < need:
        result.warnings.append(f"{len(problem.wrong_answers)} wrong answer(s); a level "
                               f"{problem.level} problem should carry at least {need}")
    if strict:
        result.problems.extend(result.warnings)
        result.warnings = []
    result.ok = not result.problems
    result.duration_s = round(time.perf_counter() - start, 3)
    return result


def _check_file(path: Path, independent: bool, strict: bool) -> ProblemCheck:
    try:
        problem = load_problem(path)
    except ProblemError as exc:
        return ProblemCheck(file=str(path), problems=[str(exc)])
    return check_problem(problem, str(path), independent=independent, strict=strict)


def check_problems(directory: str | Path, workers: int = 2, *, independent: bool = True,
                   strict: bool = False, only: set[str] | None = None) -> dict[str, Any]:
    """Check every problem file of `directory` (or only the ids in `only`); returns a
    JSON-able report with one entry per file and totals (`ok`: every file passed)."""
    directory = Path(directory).resolve()
    hide_directory(directory)
    try:
        files = problem_files(directory)
    except ProblemError as exc:
        return {"directory": str(directory), "ok": False, "n_files": 0, "n_ok": 0,
                "error": str(exc), "problems": []}
    if only is not None:
        unknown = sorted(set(only) - {f.stem for f in files})
        if unknown:
            return {"directory": str(directory), "ok": False, "n_files": 0, "n_ok": 0,
                    "error": f"no problem file for {unknown} in {directory}", "problems": []}
        files = [f for f in files if f.stem in only]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        checks = list(pool.map(lambda f: _check_file(f, independent, strict), files))
    ids: dict[str, str] = {}
    for c in checks:
        if c.id in ids:
            c.problems.append(f"id '{c.id}' is also used by {ids[c.id]}")
            c.ok = False
        elif c.id:
            ids[c.id] = c.file
    n_ok = sum(c.ok for c in checks)
    wrong = [w for c in checks for w in c.wrong_answers]
    ran = [c.independent_check for c in checks if c.independent_check is not None]
    totals = {
        "reference_correct": sum(c.reference_verdict == "correct" for c in checks),
        "independent_checks": len(ran),
        "independent_agree": sum(r.agreed for r in ran),
        "wrong_answers": len(wrong),
        "wrong_rejected": sum(w.rejected for w in wrong),
    }
    return {"directory": str(directory), "ok": n_ok == len(checks) and bool(checks),
            "n_files": len(checks), "n_ok": n_ok, "totals": totals,
            "problems": [asdict(c) for c in checks]}


def count_table(problems: list[Problem]) -> str:
    """A Markdown table of how many problems each domain has at each level (the
    suite's domains first, in their fixed order; imported ones after)."""
    counts = Counter((p.domain, p.level) for p in problems)
    domains = [d for d in DOMAINS if any(p.domain == d for p in problems)]
    domains += sorted({p.domain for p in problems} - set(DOMAINS))
    lines = ["| domain | " + " | ".join(f"L{lv}" for lv in range(1, 6)) + " | total |",
             "|---|" + "---:|" * 6]
    for d in domains:
        row = [counts[(d, lv)] for lv in range(1, 6)]
        lines.append(f"| {for_markdown(d)} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    col = [sum(counts[(d, lv)] for d in domains) for lv in range(1, 6)]
    lines.append("| **total** | " + " | ".join(map(str, col)) + f" | **{sum(col)}** |")
    return "\n".join(lines)
