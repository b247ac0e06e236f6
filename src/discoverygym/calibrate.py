"""`discoverygym calibrate SUITE`: is every task of a suite a fair measurement?

A task is valid when an agent that does the science passes it and an agent that skips
the science fails it. The suite names its agents by role in `baselines.CALIBRATION`
(plugins: `register_agents(..., calibration=...)`):

- `oracle`: does the science, knowing the form of the answer (privileged where needed);
- `baselines`: honest scripted baselines (reported, no effect on the verdict);
- `no_science`: baselines that skip the science (e.g. a forecast with the normal law);
- `trivial`: answer without measuring (a constant, a guess from the prompt, no answer).

Every agent plays the same episodes: the suite's plan for the given options (its
cases), crossed with the calibration seeds as the runner crosses them (`core.cross`).
The runs go through the ordinary runner (`run_episodes`, one run directory per agent),
so executors, workers, records and `--resume` behave as in `discoverygym run`.

Verdict per task, from the pass rates (`verdict`, first rule that applies):

1. `leaks`: a trivial agent passes more than `chance + MARGIN` of the episodes;
2. `too hard`: no oracle passes at least `ORACLE_MIN` of them;
3. `weak`: a no-science baseline passes more than `chance + MARGIN`;
4. `valid` otherwise.

`chance` is the pass rate of a blind guess among the task's possible answers: a suite
gives it in the task's tags as `chance_pass_rate` (0.5 for a yes/no question), and it is
0 for answers that are numbers or code.
"""

from __future__ import annotations

import fnmatch
import json
import math
import shlex
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .core import (
    CALIBRATION_ROLES,
    EpisodeSpec,
    UnknownName,
    agent_table,
    calibration_table,
    episode_key,
    get_suite,
)
from .core.escape import for_markdown, for_markdown_code
from .core.grid import seed_text
from .core.suite import cross

ORACLE_MIN = 0.8  # an oracle must pass at least this fraction of a task's episodes
MARGIN = 0.2  # a trivial or no-science agent may beat chance by at most this much

VALID, TOO_HARD, LEAKS, WEAK = "valid", "too hard", "leaks", "weak"


def roles_of(suite: str) -> dict[str, list[str]]:
    """The suite's CALIBRATION, checked: known agents, at least one oracle."""
    roles = calibration_table(suite)
    if roles is None:
        raise ValueError(f"Suite {suite!r} declares no CALIBRATION (in its baselines "
                         "package, or through register_agents(..., calibration=...)).")
    agents = agent_table(suite)
    for role, names in roles.items():
        for name in names:
            if name not in agents:
                raise ValueError(f"{suite}'s CALIBRATION names {name!r} as {role}, but it "
                                 f"has no such agent; agents: {', '.join(agents) or 'none'}.")
    if not roles["oracle"]:
        raise ValueError(f"{suite}'s CALIBRATION names no oracle; a task cannot be judged "
                         "solvable without one.")
    return roles


def calibration_specs(suite: str, seeds: Sequence[int], *, tasks: str | None = None,
                      options: dict[str, Any] | None = None) -> list[EpisodeSpec]:
    """The suite's cases for `options`, filtered by `tasks` (comma-separated ids or shell
    patterns such as 'mass_*'), crossed with `seeds`."""
    cases = get_suite(suite).plan(**(options or {}))
    if tasks:
        patterns = [p.strip() for p in tasks.split(",") if p.strip()]
        for pattern in patterns:
            if not any(fnmatch.fnmatchcase(c.task_id, pattern) for c in cases):
                raise UnknownName(f"--tasks {pattern!r} matches no task of this {suite} "
                                  "plan; see `discoverygym tasks " + suite + "`.")
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.task_id, p) for p in patterns)]
    return cross(suite, cases, seeds)


@dataclass
class AgentRate:
    """One agent on one task: episodes, passes, and the median of the scoring metric."""

    n: int = 0
    passed: int = 0
    values: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.passed / self.n if self.n else 0.0

    @property
    def median_value(self) -> float | None:
        return statistics.median(self.values) if self.values else None


@dataclass
class TaskCalibration:
    task_id: str
    chance: float
    rates: dict[str, AgentRate]
    verdict: str
    reason: str


#: Below this many episodes a task with a chance rate cannot be called leaking with
#: confidence; the verdict's reason says so.
FEW_EPISODES = 5


def verdict(rates: dict[str, AgentRate], roles: dict[str, list[str]],
            chance: float = 0.0) -> tuple[str, str]:
    """The verdict for one task and the reason, from the agents' pass rates (see the
    module docstring for the rules)."""
    ceiling = chance + MARGIN

    def over(role: str) -> list[str]:
        return [f"{a} {rates[a].rate:.0%}" for a in roles[role]
                if a in rates and rates[a].rate > ceiling]

    leaking = over("trivial")
    if leaking:
        reason = f"trivial above {ceiling:.0%}: {', '.join(leaking)}"
        n = min(rates[a].n for a in roles["trivial"] if a in rates)
        if chance > 0 and n < FEW_EPISODES:
            # A blind guess at a yes/no question passes a single episode half the time.
            reason += (f"; only {n} episode(s) per agent: too few to tell a leak from a "
                       f"lucky {chance:.0%} guess, use at least {FEW_EPISODES} seeds")
        return LEAKS, reason
    best = max((rates[a].rate for a in roles["oracle"] if a in rates), default=0.0)
    if best < ORACLE_MIN:
        return TOO_HARD, f"best oracle {best:.0%} < {ORACLE_MIN:.0%}"
    weak = over("no_science")
    if weak:
        return WEAK, f"no-science above {ceiling:.0%}: {', '.join(weak)}"
    return VALID, ""


#: Warn when a blind guess would be called a leak with more than this probability.
FALSE_LEAK_RISK = 0.05


def false_leak_probability(n: int, chance: float) -> float:
    """The probability that an agent guessing blindly (passing each of `n` episodes with
    probability `chance`) passes more than chance + MARGIN of them: a leak verdict by luck."""
    needed = math.floor(n * (chance + MARGIN)) + 1
    return sum(math.comb(n, k) * chance**k * (1 - chance) ** (n - k)
               for k in range(needed, n + 1))


def few_episodes_warning(suite: str, specs: Sequence[EpisodeSpec]) -> str | None:
    """One line when some task a blind guess can pass (a chance rate in its tags) gets so
    few episodes that luck alone may call it a leak: its verdict then means little."""
    chance = {t.id: float(t.tags.get("chance_pass_rate", 0.0)) for t in get_suite(suite).tasks()}
    per_task: dict[str, int] = defaultdict(int)
    for spec in specs:
        if chance.get(spec.task_id, 0.0) > 0:
            per_task[spec.task_id] += 1
    risky = sorted(((false_leak_probability(n, chance[task]), task, n)
                    for task, n in per_task.items()), reverse=True)
    risky = [entry for entry in risky if entry[0] > FALSE_LEAK_RISK]
    if not risky:
        return None
    risk, task, n = risky[0]
    return (f"too few seeds for a leak/valid verdict on {len(risky)} task(s) a blind guess "
            f"can pass: {task} gets {n} episodes, and a guess passing {chance[task]:.0%} of "
            f"them would be called a leak with probability {risk:.0%}; use at least "
            f"{FEW_EPISODES} seeds (e.g. --seeds 0-{FEW_EPISODES - 1})")


def tabulate(records_by_agent: dict[str, list[dict[str, Any]]], roles: dict[str, list[str]],
             chance_by_task: dict[str, float]) -> list[TaskCalibration]:
    """Per task: every agent's pass rate and the verdict."""
    rates: dict[str, dict[str, AgentRate]] = defaultdict(dict)
    for agent, records in records_by_agent.items():
        for record in records:
            if (record.get("details") or {}).get("agent_not_applicable"):
                continue  # a baseline of another kind of episode: shown as "–"
            entry = rates[record["task_id"]].setdefault(agent, AgentRate())
            entry.n += 1
            entry.passed += int(bool(record.get("passed")))
            value = record.get("value")
            if isinstance(value, int | float) and not isinstance(value, bool):
                entry.values.append(float(value))
    out = []
    for task_id in sorted(rates):
        chance = float(chance_by_task.get(task_id, 0.0))
        label, reason = verdict(rates[task_id], roles, chance)
        out.append(TaskCalibration(task_id, chance, rates[task_id], label, reason))
    return out


@dataclass
class CalibrationResult:
    suite: str
    seeds: list[int]
    roles: dict[str, list[str]]
    tasks: list[TaskCalibration]
    command: str
    run_dirs: dict[str, Path]
    infrastructure_failures: list[str]
    elapsed_s: float
    #: task id -> why its episodes stay public with a key (`Suite.public_by_nature`)
    public: dict[str, str] = field(default_factory=dict)

    @property
    def agents(self) -> list[str]:
        return [a for role in CALIBRATION_ROLES for a in self.roles[role]]

    def counts(self) -> dict[str, int]:
        out = {VALID: 0, TOO_HARD: 0, LEAKS: 0, WEAK: 0}
        for task in self.tasks:
            out[task.verdict] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite, "command": self.command, "seeds": self.seeds,
            "roles": self.roles, "rules": {"oracle_min": ORACLE_MIN, "margin": MARGIN},
            "verdict_counts": self.counts(),
            "tasks": [{"task_id": t.task_id, "verdict": t.verdict, "reason": t.reason,
                       "chance_pass_rate": t.chance,
                       "public_by_nature": self.public.get(t.task_id),
                       "agents": {a: {"n": r.n, "passed": r.passed, "pass_rate": r.rate,
                                      "median_value": r.median_value}
                                  for a, r in t.rates.items()}}
                      for t in self.tasks],
            "run_dirs": {a: str(p) for a, p in self.run_dirs.items()},
            "infrastructure_failures": self.infrastructure_failures,
            "elapsed_s": self.elapsed_s,
        }

    def public_note(self) -> str:
        """Which tasks stay public with a key, and why ('' when a key holds out all)."""
        reasons = sorted(set(self.public.values()))
        if not reasons:
            return ""
        tasks = [t.task_id for t in self.tasks if t.task_id in self.public]
        which = "." if len(tasks) == len(self.tasks) else (
            ": " + ", ".join(f"`{t}`" for t in tasks) + ".")
        return (f"Public by nature ({'; '.join(reasons)}): a key (`--key-file`) does not "
                "hold these episodes out" + which)

    def to_markdown(self, *, values: bool = False) -> str:
        """A markdown table (cells: passed/episodes, and the median metric with
        `values`), headed by the command that produced it."""
        role_of = {a: role for role in CALIBRATION_ROLES for a in self.roles[role]}
        head = ["task", *[f"{a} ({role_of[a].replace('_', '-')})" for a in self.agents],
                "verdict"]
        lines = [for_markdown_code(self.command, 2000), "",
                 f"Seeds {seed_text(self.seeds)}; cells are passed / episodes"
                 + (" · median metric" if values else "") + ". "
                 + ", ".join(f"{k}: {v}" for k, v in self.counts().items()) + ".", "",
                 "| " + " | ".join(head) + " |",
                 "|" + "|".join(["---"] + ["---:"] * len(self.agents) + ["---"]) + "|"]
        for t in self.tasks:
            cells = []
            for a in self.agents:
                r = t.rates.get(a)
                if r is None:
                    cells.append("–")
                    continue
                cell = f"{r.passed}/{r.n}"
                if values and r.median_value is not None:
                    cell += f" · {r.median_value:.3g}"
                cells.append(cell)
            lines.append(f"| {for_markdown(t.task_id)} | " + " | ".join(cells)
                         + f" | {t.verdict} |")
        flagged = [t for t in self.tasks if t.verdict != VALID]
        if flagged:
            lines += [""] + [f"- {for_markdown_code(t.task_id)}: {t.verdict} "
                             f"({t.reason})" for t in flagged]
        if self.public_note():
            lines += ["", self.public_note()]
        if self.infrastructure_failures:
            lines += ["", f"{len(self.infrastructure_failures)} episodes were lost to the "
                      "infrastructure and count as failures."]
        return "\n".join(lines) + "\n"


def command_line(suite: str, seeds: Sequence[int], tasks: str | None,
                 raw_options: dict[str, str]) -> str:
    """The `discoverygym calibrate` command that reproduces a table (quoted for a shell)."""
    parts = ["discoverygym calibrate", shlex.quote(suite), "--seeds", seed_text(seeds)]
    if tasks:
        parts += ["--tasks", shlex.quote(tasks)]
    for key, value in raw_options.items():
        parts += [f"--{shlex.quote(key)}", shlex.quote(str(value))]
    return " ".join(parts)


def calibrate(suite: str, *, seeds: Sequence[int], tasks: str | None = None,
              raw_options: dict[str, str] | None = None, runs_dir: Path | None = None,
              executor: str = "process", workers: int = 2, resume: bool = False,
              show_progress: bool = False,
              executor_options: dict[str, Any] | None = None) -> CalibrationResult:
    """Run every agent of the suite's CALIBRATION over the same episodes and judge each
    task. `raw_options` are the suite's run options as command-line strings."""
    import time

    from .run import run_episodes
    from .run.records import record_key

    started = time.perf_counter()
    raw_options = dict(raw_options or {})
    s = get_suite(suite)
    options = s.parse_options(raw_options)
    roles = roles_of(suite)
    specs = calibration_specs(suite, seeds, tasks=tasks, options=options)
    if not specs:
        raise ValueError(f"The {suite} plan for these options has no episodes.")
    command = command_line(suite, seeds, tasks, raw_options)
    planned = {episode_key(s.suite, s.task_id, s.seed, s.options) for s in specs}
    if runs_dir is None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        runs_dir = Path("runs") / f"calibrate-{suite}-{stamp}"
    records: dict[str, list[dict[str, Any]]] = {}
    run_dirs: dict[str, Path] = {}
    failures: list[str] = []
    agents = list(dict.fromkeys(a for role in CALIBRATION_ROLES for a in roles[role]))
    for agent in agents:
        config = {"suite": suite, "agent": agent, "options": options,
                  "calibration": {"command": command, "seeds": list(seeds)}}
        result = run_episodes(specs, out_dir=runs_dir / agent, agent=agent,
                              executor=executor, workers=workers, resume=resume,
                              config=config, show_progress=show_progress,
                              executor_options=executor_options)
        if result.interrupted:
            raise KeyboardInterrupt
        # a resumed run directory may hold other seeds or tasks: judge only this plan
        records[agent] = [r for r in result.records if record_key(r) in planned]
        run_dirs[agent] = result.out_dir
        failures += [f"{agent}: {line}" for line in result.failures]
    chance = {t.id: float(t.tags.get("chance_pass_rate", 0.0)) for t in s.tasks()}
    public = {spec.task_id: reason for spec in specs
              if (reason := s.public_by_nature(spec)) is not None}
    return CalibrationResult(suite, list(seeds), roles, tabulate(records, roles, chance),
                             command, run_dirs, failures, time.perf_counter() - started,
                             public)


def write_table(result: CalibrationResult, path: Path, *, values: bool = False) -> None:
    """Write the table as JSON (a .json path) or markdown (anything else)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    else:
        path.write_text(result.to_markdown(values=values))
