"""Task packages in the published NatureBench layout:

    <case_id>/metadata.json, problem/ (agent-visible), evaluation/evaluator.py +
    ground_truth/ (hidden), environment/, licenses/

`load_package` reads and validates one; errors name the file and the rule broken."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .scoring import best_sota

DIRECTIONS = ("higher_is_better", "lower_is_better")
#: An instance's role: the agent's `evaluate` reports development instances only; the
#: final score is computed once, at the end, on evaluation instances.
SPLITS = ("development", "evaluation")
TOPOLOGIES = ("strict_single_step", "serial_pipeline", "multi_task_parallel",
              "pretrain_finetune")


#: NatureBench's reference per-task solve budget (their SUBMISSION_SPEC timeout_seconds).
NATUREBENCH_SOLVE_S = 14_400.0


class PackageError(ValueError):
    """A package breaks a rule of the layout; the message names the file and the rule."""


@dataclass(frozen=True)
class Instance:
    """One `performance_entries` item: a dataset with its primary metric and SOTA."""

    name: str
    metric: str
    direction: str
    unit: str
    sota: float | None  # None: unparsable or missing (the instance is skipped, reported)
    sota_text: list[dict[str, Any]]
    baseline: dict[str, Any] | None
    split: str | None = None  # "development", "evaluation", or None (no split declared)


@dataclass
class Package:
    root: Path
    metadata: dict[str, Any]
    instances: list[Instance] = field(default_factory=list)

    @property
    def case_id(self) -> str:
        return self.root.name

    @property
    def problem_dir(self) -> Path:
        return self.root / "problem"

    @property
    def evaluation_dir(self) -> Path:
        return self.root / "evaluation"

    @property
    def evaluator(self) -> Path:
        return self.evaluation_dir / "evaluator.py"

    @property
    def domain(self) -> str:
        return str(self.metadata.get("domain_metadata", {}).get("primary_domain", "unknown"))

    @property
    def public(self) -> bool:
        """Generated in public mode (`package generate --seed`): anyone can regenerate
        its truths from the seed, so a score on it is no held-out evaluation."""
        naturegym = self.metadata.get("naturegym")
        return isinstance(naturegym, dict) and (naturegym.get("public") is True
                                                or naturegym.get("mode") == "public")

    @property
    def task_name(self) -> str:
        return str(self.metadata.get("task_name", self.case_id))

    @property
    def runtime_s(self) -> float:
        """The solve budget from compute_resource_requirements.runtime (seconds; strings
        such as "2h", "30 min" accepted), default one hour. NatureBench's form
        {"severity", "quantity_text"} describes the paper's method, not a budget: such a
        package gets NatureBench's reference solve time (14,400 s for every task)."""
        runtime = (self.metadata.get("compute_resource_requirements") or {}).get("runtime")
        if isinstance(runtime, dict):
            return NATUREBENCH_SOLVE_S
        return parse_runtime_s(runtime)

    def scored_instances(self, split: str | None = None) -> list[Instance]:
        """Instances with a usable SOTA (of one split, when given)."""
        return [i for i in self.instances if i.sota not in (None, 0.0)
                and (split is None or i.split == split)]

    @property
    def has_split(self) -> bool:
        """Whether the package separates development from evaluation instances (without
        a split, feedback and the final score use the same instances)."""
        return any(i.split for i in self.instances)

    def split_names(self, split: str) -> list[str]:
        return [i.name for i in self.instances if i.split == split]


def parse_runtime_s(value: Any, default: float = 3600.0) -> float:
    import re

    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return default
    m = re.match(r"\s*([\d.]+)\s*(s|sec|seconds?|m|min|minutes?|h|hr|hours?)?\s*$", value.lower())
    if not m:
        return default
    scale = {"s": 1, "m": 60, "h": 3600}[(m.group(2) or "s")[0]]
    return float(m.group(1)) * scale


def _read_metadata(root: Path) -> dict[str, Any]:
    path = root / "metadata.json"
    if not path.is_file():
        raise PackageError(f"{path}: missing (rule: every package has metadata.json)")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise PackageError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise PackageError(f"{path}: must hold a JSON object")
    return data


def _instances(meta: dict[str, Any], path: Path) -> list[Instance]:
    entries = meta.get("performance_entries")
    if not isinstance(entries, list) or not entries:
        raise PackageError(f"{path}: performance_entries must be a non-empty list "
                           "(rule: one entry per instance)")
    out = []
    for k, entry in enumerate(entries):
        where = f"{path}: performance_entries[{k}]"
        name = entry.get("dataset_name")
        if not isinstance(name, str) or not name:
            raise PackageError(f"{where}: dataset_name missing")
        metrics = entry.get("metrics") or []
        primary = [m for m in metrics if m.get("is_primary")]
        if len(primary) != 1:
            raise PackageError(f"{where} ({name}): {len(primary)} primary metrics "
                               "(rule: exactly one primary metric per instance)")
        m = primary[0]
        direction = m.get("metric_direction")
        if direction not in DIRECTIONS:
            raise PackageError(f"{where} ({name}): metric_direction {direction!r} must be one "
                               f"of {DIRECTIONS}")
        sota_entries = m.get("sota_score")
        if isinstance(sota_entries, dict | str | int | float) and not isinstance(
                sota_entries, bool):
            sota_entries = [sota_entries]  # NatureBench also takes one entry or a bare value
        if sota_entries is None:
            # NatureBench skips such an instance ("leave the value as null"); so does the
            # scorer here (sota None), and `package check` warns.
            sota_entries = []
        elif not isinstance(sota_entries, list) or not sota_entries:
            raise PackageError(f"{where} ({name}): primary metric {m.get('name')!r} has no "
                               "sota_score (rule: a SOTA for each instance)")
        split = entry.get("split")
        if split is not None and split not in SPLITS:
            raise PackageError(f"{where} ({name}): split {split!r} must be one of {SPLITS}")
        out.append(Instance(name=name, metric=str(m.get("name")), direction=direction,
                            unit=str(m.get("unit", "")),
                            sota=best_sota(sota_entries, direction) if sota_entries else None,
                            sota_text=[e if isinstance(e, dict) else {"value": e}
                                       for e in sota_entries],
                            baseline=m.get("baseline_score"), split=split))
    splits = {i.split for i in out}
    if splits != {None} and splits != set(SPLITS):
        raise PackageError(f"{path}: performance_entries declare a split on some instances "
                           "only or lack one side (rule: with a split, every entry says "
                           "'development' or 'evaluation', and both occur)")
    if len({i.name for i in out}) != len(out):
        raise PackageError(f"{path}: dataset_name repeated (rule: one entry per instance)")
    return out


def load_package(root: Path) -> Package:
    """Load and validate a package directory (static structure only; see check.py for
    the full check including the firewall and the evaluator)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise PackageError(f"{root}: not a directory")
    meta = _read_metadata(root)
    return Package(root=root, metadata=meta, instances=_instances(meta, root / "metadata.json"))


def find_packages(directory: Path) -> list[Path]:
    """Package roots directly under `directory` (folders holding metadata.json)."""
    directory = Path(directory)
    if (directory / "metadata.json").is_file():
        return [directory]
    return sorted(p for p in directory.iterdir() if (p / "metadata.json").is_file())
