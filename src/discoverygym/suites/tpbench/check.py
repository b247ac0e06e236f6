"""`check_problems(dir)`: validate every problem file of a directory and run each
reference through its own tests (and each plausible wrong answer, which must fail)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .execute import hide_directory
from .problem import Problem, ProblemError, load_problem, problem_files
from .verifier import ReferenceError_, reference_outputs, verify


@dataclass
class ProblemCheck:
    """The outcome for one file: `ok` when it loads, the reference passes all its tests
    and the plausible wrong answer (if any) fails."""

    file: str
    id: str | None = None
    version: int | None = None
    ok: bool = False
    n_tests: int = 0
    reference_verdict: str | None = None
    wrong_verdict: str | None = None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _check_one(path: Path) -> ProblemCheck:
    result = ProblemCheck(file=str(path))
    try:
        problem: Problem = load_problem(path)
    except ProblemError as exc:
        result.problems.append(str(exc))
        return result
    result.id, result.version = problem.id, problem.version
    try:
        inputs, _ = reference_outputs(problem)
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
    if problem.plausible_wrong:
        wrong = verify(problem, problem.wrong_solution_text())
        result.wrong_verdict = wrong.verdict
        if wrong.correct:
            result.problems.append("the plausible wrong answer passes every test: the tests "
                                   "do not discriminate")
    else:
        result.warnings.append("no plausible_wrong answer: discrimination is not checked")
    result.ok = not result.problems
    return result


def check_problems(directory: str | Path, workers: int = 2) -> dict[str, Any]:
    """Check every problem file of `directory`; returns a JSON-able report with one entry
    per file and the totals (`ok` is true when every file passed)."""
    directory = Path(directory).resolve()
    hide_directory(directory)
    try:
        files = problem_files(directory)
    except ProblemError as exc:
        return {"directory": str(directory), "ok": False, "n_files": 0, "n_ok": 0,
                "error": str(exc), "problems": []}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        checks = list(pool.map(_check_one, files))
    ids: dict[str, str] = {}
    for c in checks:
        if c.id in ids:
            c.problems.append(f"id '{c.id}' is also used by {ids[c.id]}")
            c.ok = False
        elif c.id:
            ids[c.id] = c.file
    n_ok = sum(c.ok for c in checks)
    return {"directory": str(directory), "ok": n_ok == len(checks) and bool(checks),
            "n_files": len(checks), "n_ok": n_ok, "problems": [asdict(c) for c in checks]}
