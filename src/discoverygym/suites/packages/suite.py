"""The packages suite: one episode per task package."""

from __future__ import annotations

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
from ...naturegym.format.package import load_package
from ...naturegym.format.scoring import TaskResult, aggregate
from .episode import PackageEpisode
from .shipped import package_roots


class PackagesSuite(Suite):
    name = "packages"
    agent_limits = AgentLimits(messages=400, tokens=2_000_000, time_s=3600)
    python_limits = PythonLimits(time_limit_s=120, cpu_s=1800)
    agent_note = "Write your outputs where the task says; the evaluator checks them."
    description = "research task packages scored against the published state of the art"
    run_options = (
        RunOption("packages", "Directory of packages (default: the shipped catalog).", str),
        RunOption("task", "Comma-separated package ids (default: all).", str),
        RunOption("time_limit_s", "Solve time per package in seconds (default: the "
                  "package's runtime).", float),
        RunOption("protocol", "Scoring rules: discoverygym (the default: the outputs left "
                  "behind are evaluated at submit; an evaluation that measured nothing is not "
                  "completed) or naturebench (theirs exactly: no evaluation asked for, no "
                  "score; any evaluation that ran is a score).", str),
        RunOption("environment", "The evaluator's Python: host (the default: "
                  "discoverygym's), package (built from the package's environment/ with uv, "
                  "cached) or naturebench-base (that plus NatureBench's base image).", str),
    )

    def _roots(self, packages: str | None = None) -> dict[str, Path]:
        return package_roots(packages)

    def tasks(self) -> list[TaskInfo]:
        out = []
        for case_id, root in self._roots().items():
            pkg = load_package(root)
            out.append(TaskInfo(case_id, pkg.task_name, {
                "domain": pkg.domain, "instances": [i.name for i in pkg.instances],
                "sota_labels": sorted({str(e.get("method")) for i in pkg.instances
                                       for e in i.sota_text})}))
        return out

    def episode(self, task_id: str, *, seed: int = 0, **options: Any) -> PackageEpisode:
        roots = self._roots(options.get("packages"))
        if task_id not in roots:
            raise UnknownName(f"Unknown package {task_id!r}. Packages: {', '.join(roots)}.")
        return PackageEpisode(load_package(roots[task_id]), seed=seed, options=options)

    def public_by_nature(self, spec: EpisodeSpec) -> str | None:
        """A package is its files: data and reference values ship with it, and the
        episode seed draws nothing a key could hold out (generated packages are keyed
        when they are generated)."""
        return "a package's files (its data and reference values ship with it)"

    def single_submit(self, spec: EpisodeSpec) -> bool:
        """The outputs left in OUTPUT_DIR are the answer; `evaluate` is development
        feedback only. A package from a host folder (`packages`) travels with no export."""
        return "packages" not in spec.options

    def plan(self, **options: Any) -> list[Case]:
        roots = self._roots(options.get("packages"))
        chosen = [t.strip() for t in options["task"].split(",")] if options.get("task") else list(
            roots)
        from .episode import SCORING_PROTOCOLS

        if options.get("protocol") not in (None, *SCORING_PROTOCOLS):
            raise UnknownName(f"Unknown scoring protocol {options['protocol']!r}. Protocols: "
                              f"{', '.join(SCORING_PROTOCOLS)}.")
        unknown = [t for t in chosen if t not in roots]
        if unknown:
            raise UnknownName(f"Unknown package(s) {unknown}. Packages: {', '.join(roots)}.")
        episode_options = {k: v for k, v in options.items() if k in ("packages", "time_limit_s", "protocol", "environment")
                           and v is not None}
        return [Case(t, dict(episode_options)) for t in chosen]

    def audit_case(self, scope: dict[str, Any]) -> Case:
        """The first package of the audit's `package` (a package or a folder of them),
        else of the shipped catalog."""
        from .attacks import audit_roots

        unknown = set(scope) - {"package"}
        if unknown:
            raise ValueError(f"The audit of packages takes only --package; got "
                             f"{', '.join(sorted(unknown))}.")
        first = audit_roots(scope)[0]
        options = {"packages": str(first.parent)} if scope.get("package") else {}
        return Case(first.name, options)

    def audit_attacks(self) -> tuple[Any, ...]:
        from .attacks import ATTACKS

        return ATTACKS

    def summarize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The aggregates over records; `package summary` hands it any run directory,
        so a field of the wrong type reads as missing (a failed task)."""
        results = []
        public = 0
        for r in records:
            details = r.get("details") if isinstance(r.get("details"), dict) else {}
            public += details.get("public") is True
            results.append(TaskResult(
                str(r.get("task_id")), str(details.get("domain", "unknown")),
                _number(r.get("value")) if details.get("completed") else None,
                _number(details.get("g_clipped"))))
        return {**aggregate(results), "public_records": public}

    def summary_renderable(self, suite_summary: dict[str, Any]) -> Any:
        """The aggregates as a rich table, for `discoverygym run` to print under its own
        table (Surpass, Match, mean/median g, completion, per domain, buckets), and a
        warning when any package played was public."""
        from rich.console import Group
        from rich.text import Text

        from .report import aggregate_table

        table = aggregate_table(suite_summary, "packages: g against the state of the art")
        public = suite_summary.get("public_records")
        if not isinstance(public, int) or isinstance(public, bool) or public <= 0:
            return table
        return Group(table, Text(public_warning(public), style="bold yellow"))


def public_warning(count: int) -> str:
    """The line a summary shows when public packages were played."""
    return (f"public: {count} of these records played public packages (generated with "
            "--seed): anyone can regenerate their truths, so these scores are no "
            "held-out evaluation")


def _number(value: Any) -> float | None:
    """A record's number as a float (as written, NaN included), or None when it is not
    a number or too large for a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None
