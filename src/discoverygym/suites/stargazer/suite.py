"""The `stargazer` suite: task listing, episode construction, run plans, summaries."""

from __future__ import annotations

from collections import defaultdict
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
from ...core.keys import Key
from .bank import (
    BANK_SIZES,
    DEFAULT_BANK_SEED,
    bank_task,
    bank_task_ids,
    is_bank_id,
    keyed_bank_task,
)
from .episode import StargazerEpisode
from .importer import REAL_SETUPS, ImportRefused, load_published, published_files
from .real import REAL_IDS, real_task
from .scoring import CRITERIA, MODES
from .task import RVTask

TIERS = ("easy", "medium", "hard", "real")


def _parse_tier(value: str) -> str:
    if value not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}")
    return value


def _check_episode_options(options: dict[str, Any]) -> None:
    unknown = set(options) - {"mode", "tasks_from", "real_setup"}
    if unknown:
        raise ValueError(f"unknown stargazer episode option(s): {', '.join(sorted(unknown))}")


def _parse_mode(value: str) -> str:
    if value not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    return value


def _parse_real_setup(value: str) -> str:
    if value not in REAL_SETUPS:
        raise ValueError(f"real_setup must be one of {', '.join(REAL_SETUPS)}")
    return value


def scoring_mode(tier: str, mode: str, real_setup: str) -> str:
    """The mode a task is scored in. Real tasks (ours and imported real-data files) are
    scored in v2 unless `real_setup` is "published": under v1 even their true orbits
    fail (the rms gate ignores jitter; the published files' phases are off)."""
    if tier == "real" and real_setup == "rebuilt":
        return "v2"
    return mode


def _parse_tasks(value: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in value.split(",") if x.strip())


class StargazerSuite(Suite):
    """Radial-velocity exoplanet discovery (Stargazer): synthetic banks, real systems and
    imported published task files, scored in the published mode v1 or our strict v2."""

    name = "stargazer"
    rollup_tags = ("tier",)  # 120 tasks: the run's table and the report show tiers
    # The published per-tier budgets (tokens and seconds; see the spec); Keplerian fits
    # and nested sampling take longer in the interpreter.
    agent_limits = AgentLimits(messages=300, tokens=900_000, time_s=1500)
    tier_limits = {  # noqa: RUF012 - a read-only table
        "easy": AgentLimits(messages=300, tokens=200_000, time_s=600),
        "medium": AgentLimits(messages=300, tokens=450_000, time_s=900),
        "hard": AgentLimits(messages=300, tokens=900_000, time_s=1500),
    }
    python_limits = PythonLimits(time_limit_s=180, cpu_s=1800)
    agent_note = "Fit every planet you find; submit the planet list in the stated format."
    description = ("Find the planets in radial-velocity data: synthetic tasks in three "
                   "tiers, real systems, published task files; scoring v1 (published) or "
                   "v2 (strict).")
    run_options = (
        RunOption("tier", "easy | medium | hard | real (default: all)", _parse_tier),
        RunOption("mode", "scoring mode v1 (published rule) | v2 (strict, default)",
                  _parse_mode, "v2"),
        RunOption("bank_seed", "use the synthetic bank of this seed instead of the default",
                  int),
        RunOption("tasks_from", "directory of published task JSON files to run instead", str),
        RunOption("tasks", "comma-separated task ids", _parse_tasks),
        RunOption("real_setup",
                  "real tasks: rebuilt (default: scored in v2; imported real files against "
                  "our rebuilt truths) | published (scored in --mode; imported real files "
                  "against their own truths)", _parse_real_setup, "rebuilt"),
    )

    # ---- tasks -------------------------------------------------------------------------
    def tasks(self) -> list[TaskInfo]:
        out = []
        for task_id in bank_task_ids(DEFAULT_BANK_SEED):
            tier = task_id.split("-")[0]
            out.append(TaskInfo(task_id, f"synthetic RV system ({tier})", {"tier": tier}))
        out.extend(self._real_infos())
        return out

    def _real_infos(self) -> list[TaskInfo]:
        return [TaskInfo(i, "real RV system (anonymised)", {"tier": "real"}) for i in REAL_IDS]

    def load_task(self, task_id: str, **options: Any) -> RVTask:
        """The task behind an id (bank, real, or a published file under `tasks_from`)."""
        tasks_from = options.get("tasks_from")
        if tasks_from:
            files = published_files(tasks_from)
            if task_id in files:
                try:
                    return load_published(files[task_id],
                                          real_setup=options.get("real_setup") or "rebuilt")
                except ImportRefused as exc:
                    raise ValueError(str(exc)) from None
        if is_bank_id(task_id):
            try:
                return bank_task(task_id)
            except ValueError as exc:
                raise UnknownName(str(exc)) from None
        if task_id in REAL_IDS:
            return real_task(task_id)
        raise UnknownName(
            f"Unknown stargazer task {task_id!r}. Ids: easy-000..easy-{BANK_SIZES['easy'] - 1:03d}, "
            f"medium-000.., hard-000.., bank<N>-<tier>-<k>, real-001..real-{len(REAL_IDS):03d}, "
            "or the file stems of a --tasks-from directory.")

    def single_submit(self, spec: EpisodeSpec) -> bool:
        """The data are all in the workspace; one submission (of the 3 allowed) is the
        answer. Tasks from a host folder (`tasks_from`) do not travel."""
        return "tasks_from" not in spec.options

    def episode(self, task_id: str, *, seed: int = 0, **options: Any) -> StargazerEpisode:
        """One episode. Options: mode (v1 | v2), real_setup (rebuilt | published; real
        tasks only, recorded in their options), tasks_from (a published-file directory)."""
        _check_episode_options(options)
        return self._episode_of(self.load_task(task_id, **options), seed, options)

    def keyed_episode(self, spec: EpisodeSpec, key: Key) -> StargazerEpisode:
        """With a key, a synthetic bank id draws its system from the key (a task of the
        same tier; see `keyed_bank_task`). Real systems and published task files are
        public by nature and stay as they are."""
        options = dict(spec.options)
        published = (options.get("tasks_from")
                     and spec.task_id in published_files(options["tasks_from"]))
        if published or not is_bank_id(spec.task_id):
            return self.episode(spec.task_id, seed=spec.seed, **options)
        _check_episode_options(options)
        try:
            task = keyed_bank_task(spec.task_id, key.derive(self.name, spec.task_id, spec.seed))
        except ValueError as exc:
            raise UnknownName(str(exc)) from None
        return self._episode_of(task, spec.seed, options)

    def public_by_nature(self, spec: EpisodeSpec) -> str | None:
        """Real systems and published task files are the same for everyone."""
        if spec.options.get("tasks_from") and spec.task_id in published_files(
                spec.options["tasks_from"]):
            return "a published task file"
        if not is_bank_id(spec.task_id):
            return "a real RV system (published data)"
        return None

    def _episode_of(self, task: RVTask, seed: int, options: dict[str, Any]) -> StargazerEpisode:
        mode = _parse_mode(options.get("mode") or "v2")
        real_setup = _parse_real_setup(options.get("real_setup") or "rebuilt")
        recorded = {k: v for k, v in options.items() if v is not None}
        if task.tier == "real":
            mode = scoring_mode(task.tier, mode, real_setup)
            recorded["real_setup"] = real_setup
        return StargazerEpisode(task, seed=seed, mode=mode, options=recorded | {"mode": mode})

    # ---- plans -------------------------------------------------------------------------
    def plan(self, *, tier: str | None = None, mode: str = "v2", bank_seed: int | None = None,
             tasks_from: str | None = None, tasks: tuple[str, ...] | None = None,
             real_setup: str = "rebuilt") -> list[Case]:
        """Cases of a run. Default: the default bank's 100 tasks and the 20 real ones.
        Each case's options are those its record will carry (real tasks: the mode they
        are scored in and `real_setup`)."""
        _parse_mode(mode)
        _parse_real_setup(real_setup)
        options: dict[str, Any] = {"mode": mode}
        ids = self._plan_ids(tier, bank_seed, tasks_from, options, real_setup)
        if tasks:
            wanted = set(tasks)
            ids = [i for i in ids if i in wanted] + [
                i for i in tasks if i not in set(ids)
                and self._known(i, options | {"real_setup": real_setup})]
        cases = []
        for task_id in ids:
            task_options = dict(options)
            if self._is_real(task_id, options | {"real_setup": real_setup}):
                task_options |= {"mode": scoring_mode("real", mode, real_setup),
                                 "real_setup": real_setup}
            cases.append(Case(task_id, task_options))
        return cases

    def _plan_ids(self, tier: str | None, bank_seed: int | None, tasks_from: str | None,
                  options: dict[str, Any], real_setup: str) -> list[str]:
        ids: list[str] = []
        if tasks_from:
            # a directory of published files replaces the banks; the tier filter uses each
            # file's truth_difficulty
            directory = str(Path(tasks_from).resolve())
            options["tasks_from"] = directory
            for task_id, path in published_files(directory).items():
                try:
                    task = load_published(path, real_setup=real_setup)
                except ImportRefused as exc:
                    raise ValueError(str(exc)) from None
                if tier is None or task.tier == tier:
                    ids.append(task_id)
            return ids
        bank = DEFAULT_BANK_SEED if bank_seed is None else int(bank_seed)
        if tier in (None, "easy", "medium", "hard"):
            ids += [i for i in bank_task_ids(bank)
                    if tier is None or i.removeprefix(f"bank{bank}-").startswith(tier)]
        if tier == "real" or (tier is None and bank_seed is None):
            ids += list(REAL_IDS)
        return ids

    def _is_real(self, task_id: str, options: dict[str, Any]) -> bool:
        """Whether a planned id is a real task (without generating bank tasks)."""
        if options.get("tasks_from") and task_id in published_files(options["tasks_from"]):
            return self.load_task(task_id, **options).tier == "real"
        return task_id in REAL_IDS

    def _known(self, task_id: str, options: dict[str, Any]) -> bool:
        try:
            self.load_task(task_id, **options)
        except UnknownName:
            raise
        return True

    # ---- reports -----------------------------------------------------------------------
    def report_sections(self, records: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """Per episode (the first 12): data per instrument with the best submitted and the
        true RV curves, and the residuals."""
        from .report import report_sections

        return report_sections(records, self.load_task)

    # ---- summaries ---------------------------------------------------------------------
    def summarize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Pass rate per tier and per criterion for each mode; planets submitted
        (`found`), recovered one by one (`recovered`, see evaluator.n_recovered) and true,
        per episode on average."""
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in records:
            tier = (r.get("details") or {}).get("tier") or _tier_from_id(r["task_id"])
            groups[tier].append(r)
            groups["all"].append(r)
        out: dict[str, Any] = {}
        for tier, recs in sorted(groups.items()):
            n = len(recs)
            entry: dict[str, Any] = {"n": n}
            for mode in MODES:
                verdicts = [(r.get("details") or {}).get(mode) or {} for r in recs]
                entry[mode] = {
                    "pass_rate": sum(bool(v.get("passed")) for v in verdicts) / n,
                    "criteria": {c: sum(bool((v.get("criteria") or {}).get(c)) for v in verdicts) / n
                                 for c in CRITERIA},
                }
            found = [int((r.get("details") or {}).get("n_found") or 0) for r in recs]
            recovered = [int((r.get("details") or {}).get("n_recovered") or 0) for r in recs]
            true = [_n_true(r) for r in recs]
            entry["mean_planets_found"] = sum(found) / n
            entry["mean_planets_recovered"] = sum(recovered) / n
            entry["mean_planets_true"] = sum(true) / n
            out[tier] = entry
        return {"stargazer": out}


def _tier_from_id(task_id: str) -> str:
    for tier in TIERS:
        if tier in task_id:
            return tier
    return "imported"


def _n_true(record: dict[str, Any]) -> int:
    details = record.get("details") or {}
    if "n_true" in details:
        return int(details["n_true"])
    truth = record.get("truth") or {}
    return int(truth.get("n_planets", 0)) if isinstance(truth, dict) else 0
