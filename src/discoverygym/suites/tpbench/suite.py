"""The tpbench suite: its tasks, options, plan and summaries (the `Suite`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ...core import (
    AgentLimits,
    Case,
    EpisodeSpec,
    PythonLimits,
    RunOption,
    Suite,
    TaskInfo,
    UnknownName,
)
from .episode import TPBenchEpisode
from .execute import hide_directory
from .importer import TABLE_SUFFIXES, import_table
from .problem import Problem, builtin_problem_dir, canonical_domain, load_problems
from .scoring import summarize_attempts


def parse_levels(text: str) -> tuple[int, ...]:
    """"3" -> (3,), "1-5" -> (1, 2, 3, 4, 5), "1,3" -> (1, 3)."""
    levels: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError as exc:
            raise ValueError(f"--level takes levels 1-5 like '3', '1-4' or '2,4'; got {text!r}."
                             ) from exc
        if not 1 <= a <= b <= 5:
            raise ValueError(f"--level takes levels 1-5 like '3', '1-4' or '2,4'; got {text!r}.")
        levels.update(range(a, b + 1))
    if not levels:
        raise ValueError("--level is empty.")
    return tuple(sorted(levels))


@lru_cache(maxsize=16)
def problem_set(directory: str | None = None) -> tuple[Problem, ...]:
    """The problems of a directory (default: the shipped set) or of a TPBench-format
    table file (.json/.jsonl/.csv/.parquet with an optional sidecar beside it), loaded
    once per process. External problems are hidden from the isolated answer processes."""
    path = Path(directory).resolve() if directory else builtin_problem_dir()
    if path.is_file() and path.suffix.lower() in TABLE_SUFFIXES:
        hide_directory(path.parent)
        return tuple(import_table(path))
    if directory:
        hide_directory(path)
    return tuple(load_problems(path))


class TPBenchSuite(Suite):
    name = "tpbench"
    agent_limits = AgentLimits(messages=100, tokens=500_000, time_s=1800)
    python_limits = PythonLimits(time_limit_s=60, cpu_s=900)
    agent_note = ("Submit a Python function or expression exactly as the task's answer "
                  "format says; it is verified automatically.")
    description = ("Theoretical-physics problems (levels 1-5) answered with Python "
                   "functions, verified by isolated execution against expert references.")
    run_options = (
        RunOption("level", "Levels to run: '3', '1-5' or '2,4' (default all).", parse_levels),
        RunOption("domain", "Domains, comma separated, in the suite's spelling or the "
                  "published one (e.g. cosmology,quantum_mechanics or cosmo,qm).",
                  lambda s: tuple(canonical_domain(d) for d in s.split(",") if d.strip())),
        RunOption("problems", "A directory of problem files (or a TPBench-format table) "
                  "instead of the shipped set.",
                  lambda s: str(Path(s).resolve())),
    )

    def tasks(self, problems: str | None = None) -> list[TaskInfo]:
        return [TaskInfo(p.id, p.title, {"level": p.level, "domain": p.domain,
                                         "version": p.version})
                for p in problem_set(problems)]

    def problem(self, task_id: str, problems: str | None = None) -> Problem:
        for p in problem_set(problems):
            if p.id == task_id:
                return p
        raise UnknownName(f"Unknown tpbench problem {task_id!r}. See `discoverygym tasks "
                          "tpbench`.")

    def public_by_nature(self, spec: EpisodeSpec) -> str | None:
        """A problem is its published statement and reference solution; the episode
        seed is an attempt index (`--seeds 0-4`: five attempts) and draws nothing a key
        could hold out."""
        return "a published problem (its reference solution ships with the package)"

    def single_submit(self, spec: EpisodeSpec) -> bool:
        """One written solution; problems from a host folder (`problems`) do not travel."""
        return "problems" not in spec.options

    def episode(self, task_id: str, *, seed: int = 0, **options: Any) -> TPBenchEpisode:
        unknown = set(options) - {"problems"}
        if unknown:
            raise ValueError(f"tpbench episodes take only the option 'problems'; got "
                             f"{sorted(unknown)}.")
        problems = options.get("problems")
        problem = self.problem(task_id, problems)
        return TPBenchEpisode(problem, seed=seed,
                              options={"problems": problems} if problems else {})

    def audit_case(self, scope: dict[str, Any]) -> Case:
        """The first problem of the audit's `problems` (a file or folder), else of the
        shipped set."""
        unknown = set(scope) - {"problems"}
        if unknown:
            raise ValueError(f"The audit of tpbench takes only --problems; got "
                             f"{', '.join(sorted(unknown))}.")
        problems = scope.get("problems")
        return self.plan(**({"problems": problems} if problems else {}))[0]

    def audit_attacks(self) -> tuple[Any, ...]:
        from .attacks import ATTACKS

        return ATTACKS

    def audit_code_answer(self, spec: EpisodeSpec, code: str) -> dict[str, Any] | None:
        """A written solution whose function returns 0.0 and whose module runs `code`
        when the verifier loads it."""
        episode = self.episode(spec.task_id, seed=spec.seed, **spec.options)
        function = episode.view().workspace()["function_name"]
        body = f"def {function}(*args, **kwargs):\n    return 0.0\n{code}"
        return {"solution": f"```python\n{body}```\n"}

    def plan(self, level: tuple[int, ...] | None = None, domain: tuple[str, ...] | None = None,
             problems: str | None = None, **unknown: Any) -> list[Case]:
        """One case per chosen problem; k attempts are the runner's seeds 0..k-1."""
        if unknown:
            raise ValueError(f"Unknown tpbench options {sorted(unknown)}.")
        chosen = list(problem_set(problems))
        if level:
            chosen = [p for p in chosen if p.level in set(level)]
        if domain:
            wanted = {canonical_domain(d) for d in domain}
            known = {p.domain.lower() for p in problem_set(problems)}
            missing = wanted - known
            if missing:
                raise ValueError(f"Unknown domain(s) {sorted(missing)}; domains: "
                                 f"{', '.join(sorted(known))}.")
            chosen = [p for p in chosen if p.domain.lower() in wanted]
        options = {"problems": problems} if problems else {}
        return [Case(p.id, dict(options)) for p in chosen]

    def summarize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """avg@k, best@k and the level-weighted GPA overall, per level, per domain and per
        problem (see scoring.py for the grade rule at any k)."""
        return summarize_attempts(records)

    def report_sections(self, records: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """Pass rates by level and by domain (bar charts with counts), verdicts, grades."""
        from .report import report_sections

        return report_sections(records)


__all__ = ["TPBenchSuite", "parse_levels", "problem_set"]
