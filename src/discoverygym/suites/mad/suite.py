"""The mad suite: its tasks, options, plan and summaries (the `Suite`)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

import numpy as np

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
from . import streams
from .episode import MadEpisode
from .variants import make_episode
from .worlds import WORLDS, World, make_world, world_class

DEFAULT_SEEDS = tuple(range(10))
DEFAULT_ICL_TRIALS = 8  # paper: 8 trials in the in-context-learning variant
ICL_DEFAULT_LAWS = ("normal", "kappa10")  # paper: ICL with kappa in {0, 10}


def _world_classes() -> dict[str, type[World]]:
    out = {}
    for name in WORLDS:
        try:
            out[name] = world_class(name)
        except ImportError:  # a world whose extra is missing is simply not offered
            continue
    return out


PROTOCOL_OPTIONS = (
    RunOption("world", "world: " + " | ".join(WORLDS) + " (default classical)", str, "classical"),
    RunOption("law", "law of the world (default: all of the world's laws)", str),
    RunOption("variant", "predict | infer-<parameter> (classical: infer-kappa) | visual | icl "
              "(default predict)", str, "predict"),
    RunOption("trials", f"trials per episode in the icl variant (default {DEFAULT_ICL_TRIALS})",
              int),
    RunOption("protocol", "scoring protocol: discovery (the default; classical and fluid: "
              "predict a fresh preparation of the world, scored against normal physics run "
              "from it; quantum: an altered law is scored against the best forecast that "
              "ignores it) | paper (the published setup)", str),
)


def resolve_protocol(cls: type[World], protocol: str | None) -> str:
    """The protocol an episode runs: the one asked for, or the world's default."""
    if protocol is None:
        return cls.protocols[0]
    if protocol not in cls.protocols:
        raise ValueError(f"world '{cls.name}' has no protocol {protocol!r}; protocols: "
                         f"{', '.join(cls.protocols)}")
    return protocol


def _split_task(task_id: str) -> tuple[str, str]:
    world, sep, law = task_id.partition("-")
    if not sep or world not in WORLDS:
        raise UnknownName(f"Unknown mad task {task_id!r}; tasks look like classical-normal.")
    return world, law


class MadSuite(Suite):
    """Measure-then-predict in worlds with altered physical laws."""

    name = "mad"
    default_seeds = DEFAULT_SEEDS  # the paper's ten runs of each task
    rollup_tags = ("world", "law")  # tables past ROLLUP_OVER tasks show world and law
    agent_limits = AgentLimits(messages=300, tokens=1_500_000, time_s=3600)
    python_limits = PythonLimits(time_limit_s=120, cpu_s=1800)
    agent_note = "The laws of this world may differ from the ones you know; infer them from data."
    description = ("MaD Physics: buy noisy measurements of a world with altered laws under a "
                   "budget, then predict unseen later states")

    def __init__(self) -> None:
        worlds = _world_classes()
        extra: dict[str, RunOption] = {}
        for cls in worlds.values():
            for opt in getattr(cls, "run_options", ()):
                extra.setdefault(opt.name, opt)
        self.run_options = PROTOCOL_OPTIONS + tuple(extra.values())
        self._worlds = worlds

    def tasks(self) -> list[TaskInfo]:
        out = []
        for name, cls in self._worlds.items():
            for law in cls.laws:
                out.append(TaskInfo(f"{name}-{law}", f"{name} world, law {law}: measure, "
                                    "then predict", {"world": name, "law": law}))
            for param in cls.parameter_laws:
                out.append(TaskInfo(f"{name}-infer-{param}", f"{name} world: infer {param}",
                                    {"world": name, "parameter": param}))
        return out

    def episode(self, task_id: str, *, seed: int = 0, **options: Any) -> MadEpisode:
        world_name, law = _split_task(task_id)
        cls = world_class(world_name)
        world_options = dict(options)
        protocol = resolve_protocol(cls, world_options.pop("protocol", None))
        options = {**options, "protocol": protocol}  # the record says which protocol ran
        if len(cls.protocols) > 1:
            world_options["protocol"] = protocol
        variant = world_options.pop("variant", "predict")
        trials = int(world_options.pop("trials", 1) or 1)
        if law.startswith("infer-"):
            param = law[len("infer-"):]
            if param not in cls.parameter_laws:
                raise UnknownName(f"World '{world_name}' has no parameter {param!r} to infer.")
            candidates = cls.parameter_laws[param]
            law = candidates[int(np.random.default_rng([int(seed), streams.MAD_LAW_CHOICE]).integers(len(candidates)))]
            variant = "infer"
        elif law not in cls.laws:
            raise UnknownName(f"Unknown mad task {task_id!r}. Laws of '{world_name}': "
                              f"{', '.join(cls.laws)}.")
        if variant.startswith("infer"):
            variant = "infer"
        world = make_world(world_name, seed=seed, law=law, **world_options)
        return make_episode(world, task_id=task_id, seed=seed, options=options,
                            variant=variant, trials=trials)

    def plan(self, **options: Any) -> list[Case]:
        options = {k: v for k, v in options.items() if v is not None}
        world_name = options.pop("world", "classical")
        cls = world_class(world_name)
        law = options.pop("law", None)
        variant = options.pop("variant", "predict")
        spec_options = dict(options)
        spec_options["protocol"] = resolve_protocol(cls, options.get("protocol"))
        accepted = {opt.name for opt in getattr(cls, "run_options", ())} | {"trials", "protocol"}
        foreign = sorted(set(spec_options) - accepted)
        if foreign:
            flags = ", ".join("--" + name.replace("_", "-") for name in foreign)
            raise ValueError(f"{flags}: not an option of the {world_name} world; its options: "
                             + ", ".join("--" + o.name.replace("_", "-")
                                         for o in getattr(cls, "run_options", ())))
        if variant.startswith("infer-"):
            param = variant[len("infer-"):]
            if param not in cls.parameter_laws:
                raise ValueError(f"world '{world_name}' has no parameter {param!r} to infer; "
                                 f"parameters: {', '.join(cls.parameter_laws) or 'none'}")
            spec_options.pop("trials", None)
            task_ids = [f"{world_name}-infer-{param}"]
        elif variant in ("predict", "visual", "icl"):
            if variant != "predict":
                spec_options["variant"] = variant
            if variant == "icl":
                spec_options["trials"] = int(spec_options.get("trials") or DEFAULT_ICL_TRIALS)
            elif "trials" in spec_options:
                raise ValueError("--trials belongs to --variant icl")
            laws = [law] if law else list(ICL_DEFAULT_LAWS if variant == "icl" else cls.laws)
            for name in laws:
                if name not in cls.laws:
                    raise ValueError(f"world '{world_name}' has no law {name!r}; laws: "
                                     f"{', '.join(cls.laws)}")
            task_ids = [f"{world_name}-{name}" for name in laws]
        else:
            raise ValueError(f"unknown variant {variant!r}; use predict, infer-<parameter>, "
                             "visual or icl")
        return [Case(task, dict(spec_options)) for task in task_ids]

    def default_episodes(self) -> list[EpisodeSpec]:
        return self.episodes(world="classical")

    def shared_work(self, spec: EpisodeSpec) -> str | None:
        # A quantum seed's laws score against the same joint states, whose marginals
        # each process evolves once (quantum_world's marginal cache): one worker per seed.
        if spec.task_id.partition("-")[0] == "quantum":
            return f"quantum seed {spec.seed}"
        return None

    def report_sections(self, records: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """Error per task, predicted vs true states (classical: positions per episode;
        other worlds: a scatter), and estimate vs truth for parameter inference."""
        from .report import report_sections

        return report_sections(records)

    def summarize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Per task (world and law): mean and median error over answered episodes, mean
        and median skill against the world's trivial reference, pass rate, and the
        number of episodes without an answer (counted as failures, left out of means)."""
        by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in records:
            by_task[r["task_id"]].append(r)
        per_task = {}
        for task, group in sorted(by_task.items()):
            answered = [r for r in group if r.get("value") is not None]
            errors = [float(r["value"]) for r in answered]
            skills = [float(r["details"]["skill"]) for r in answered
                      if "skill" in r.get("details", {})]
            entry: dict[str, Any] = {
                "n": len(group), "n_missing": len(group) - len(answered),
                "metric": group[0].get("metric"),
                "pass_rate": sum(bool(r.get("passed")) for r in group) / len(group),
                "mean_error": statistics.fmean(errors) if errors else None,
                "median_error": statistics.median(errors) if errors else None,
            }
            if skills:
                entry["mean_skill"] = statistics.fmean(skills)
                entry["median_skill"] = statistics.median(skills)
            trial_errors = [r["details"]["trial_errors"] for r in answered
                            if "trial_errors" in r.get("details", {})]
            if trial_errors:
                entry["mean_error_per_trial"] = np.mean(np.array(trial_errors), axis=0).tolist()
            references = sorted({r["details"]["reference"] for r in answered
                                 if "reference" in r.get("details", {})})
            if references:
                entry["skill_reference"] = "; ".join(references)
            per_task[task] = entry
        return {"per_task": per_task,
                "skill": "1 - error / error of the task's reference (per task: "
                         "skill_reference), per episode, computed from the truth: persistence "
                         "or uniform (paper protocol, normal laws), the normal-physics "
                         "forecast (altered laws, discovery protocol), the median "
                         "(classical) or nearest (fluid, quantum) altered law's forecast "
                         "(normal laws, discovery protocol)"}

    def summary_renderable(self, suite_summary: dict[str, Any]) -> Any:
        """Mean and median prediction error and skill per task (world and law), for the
        table `discoverygym run` prints."""
        per_task = suite_summary.get("per_task") or {}
        if not per_task:
            return None
        import shutil

        from ...core.escape import for_terminal
        from ...core.fit_table import fit_table

        def num(value: Any) -> str:
            return "-" if value is None else f"{value:.4g}"

        # Numbers keep every digit at 80 columns: the metric's name folds, and columns
        # that do not fit are left out from the right (the caption names them).
        headers = ["task", "n", "metric", "mean error", "median error", "mean skill",
                   "median skill", "no answer"]
        rows = [[for_terminal(task), str(e["n"]), for_terminal(e.get("metric") or ""),
                 num(e["mean_error"]), num(e["median_error"]), num(e.get("mean_skill")),
                 num(e.get("median_skill")), str(e["n_missing"])]
                for task, e in per_task.items()]
        return fit_table("mad: prediction error and skill per task", headers, rows,
                         numeric={1, 3, 4, 5, 6, 7}, drop_first=(2,),
                         width=shutil.get_terminal_size().columns,
                         caption="skill = 1 - error / error of the task's reference "
                                 "(summary.json: skill_reference)")


__all__ = ["MadSuite"]
