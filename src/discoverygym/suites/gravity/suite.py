"""The gravity suite: Gravity-Bench-v1's 50 tasks over 206 task-world pairs, plus
procedural worlds from `world_seed`."""

from __future__ import annotations

from collections import defaultdict
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
from ...core.seeds import MAX_SEEDS, parse_seeds
from .episode import DEFAULT_PROTOCOL, GravityEpisode, parse_protocol
from .report import observation_sections
from .streams import GRAVITY_LAW_TWIN
from .tasks import FULL_OBS_THRESHOLD, TASK_IDS, TASKS, Task, published_pairs, tasks_for_world
from .worlds import (
    PUBLISHED_WORLDS,
    SETUPS,
    WORLD_IDS,
    WorldSpec,
    get_world,
    leak_free_scale,
    leak_free_window,
    mirror_coin,
    mirrored_boundness,
    mirrored_law,
    procedural_kind,
)


def _protocol_option(text: str) -> str:
    return parse_protocol(text).name


def _setup_option(text: str) -> str:
    if text not in SETUPS:
        raise ValueError(f"Unknown setup {text!r}. Setups: {', '.join(SETUPS)}.")
    return text


def leak_free_world(spec: WorldSpec, task: Task, seed: int) -> WorldSpec:
    """A published world as the leak-free setup plays it on `seed` (README, Calibration):
    its window and its scale drawn from the seed, and, for a boundness question, its
    mirrored twin with even odds. "published" plays the world as it is."""
    spec = leak_free_window(spec, seed)
    if task.balanced_boundness and mirror_coin(spec.id, seed):
        spec = mirrored_boundness(spec)
    return leak_free_scale(spec, seed)


def leak_free_procedural_world(spec: WorldSpec, task: Task, seed: int) -> WorldSpec:
    """A procedural world as the leak-free setup plays it on `seed`: its window and
    scale are drawn from the world seed already, but its kind is not balanced (most
    worlds that ask is_bound are bound, most that ask kepler_3rd_law are Newtonian), so
    a yes/no question about boundness or the law is asked of the world or of its twin
    with even odds. "published" plays the world as drawn."""
    if task.balanced_boundness and mirror_coin(spec.id, seed):
        return mirrored_boundness(spec)
    if task.balanced_law and mirror_coin(spec.id, seed, GRAVITY_LAW_TWIN):
        return mirrored_law(spec, seed)
    return spec


def _names(value: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
    """A comma list (command line) or a list of names; None or empty means all."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [item.strip() for item in items if item.strip()]
    return items or None


def _check(names: list[str] | None, allowed: tuple[str, ...], what: str) -> None:
    for name in names or ():
        if name not in allowed:
            raise UnknownName(f"Unknown gravity {what} {name!r}. Allowed: {', '.join(allowed)}.")


class GravitySuite(Suite):
    """Two-body worlds simulated with REBOUND; observe positions (under a budget or all at
    once) and infer a physical quantity, answered in SI."""

    name = "gravity"
    # Gravity-Bench publishes no LLM limits: room for a budget-obs-100 episode (ten
    # observe calls, a few analysis steps) several times over.
    agent_limits = AgentLimits(messages=200, tokens=1_000_000, time_s=1800)
    python_limits = PythonLimits(time_limit_s=60, cpu_s=900)
    agent_note = "Answers are always in SI units, whatever units the data are shown in."
    description = ("Gravity-Bench-v1: two-body REBOUND worlds; plan observations under a "
                   "budget and infer physical quantities (50 tasks, 206 task-world pairs).")
    keyed_options = ("world_seed",)
    run_options = (
        RunOption("protocol", "full-obs or budget-obs-N (default budget-obs-100)",
                  _protocol_option, DEFAULT_PROTOCOL),
        RunOption("tasks", "comma-separated task ids (default: all)", _names),
        RunOption("worlds", "comma-separated world ids (default: all published worlds)", _names),
        RunOption("world_seed", "draw a procedural world from this seed instead", int),
        RunOption("world_seeds", "procedural worlds from a range of seeds, e.g. 0-19 "
                  "(every applicable task on each)", parse_seeds),
        RunOption("setup", "leak-free (default: published worlds' windows and scales drawn "
                  "from the seed; is_bound, and kepler_3rd_law on procedural worlds, "
                  "balanced; stricter thresholds where a guess passed) or published "
                  "(Gravity-Bench-v1 exactly, and procedural worlds as drawn)",
                  _setup_option, "leak-free"),
    )

    def tasks(self) -> list[TaskInfo]:
        return [
            TaskInfo(task.id, task.question.split("?")[0] + "?" if "?" in task.question
                     else task.question,
                     tags={"worlds": list(task.worlds), "answer_type": task.answer_type,
                           "answer_unit": task.unit,
                           "threshold_full_obs": 0.0 if task.answer_type == "boolean"
                           else FULL_OBS_THRESHOLD,
                           "threshold_budget_obs": task.budget_threshold_for("leak-free"),
                           "threshold_budget_obs_published": task.budget_threshold,
                           "applies_to": task.kind.name,
                           # a blind yes/no guess is right half the time (calibrate)
                           "chance_pass_rate": 0.5 if task.answer_type == "boolean"
                           else 0.0})
            for task in TASKS.values()
        ]

    def episode(self, task_id: str, *, seed: int = 0, world: str | None = None,
                protocol: str = DEFAULT_PROTOCOL, world_seed: int | None = None,
                setup: str = "leak-free", **unknown: Any) -> GravityEpisode:
        """Build one episode: `world` (a published id or "proc-N") or `world_seed`, a
        protocol ("full-obs" or "budget-obs-N") and the setup ("leak-free" or
        "published")."""
        if unknown:
            raise UnknownName(f"Unknown gravity option(s) {', '.join(sorted(unknown))}. "
                              "Options: world, world_seed, protocol, setup.")
        _check([task_id], TASK_IDS, "task")
        setup = _setup_option(setup)
        if world is not None and world_seed is not None:
            raise ValueError("Give either world or world_seed, not both.")
        if world is None and world_seed is None:
            world = "A"
        spec = get_world(world, world_seed)
        proto = parse_protocol(protocol)
        task = TASKS[task_id]
        world_id = spec.id  # the world asked for; a mirrored twin keeps it in the options
        published = world_seed is None and world_id in PUBLISHED_WORLDS
        if setup == "leak-free":
            spec = (leak_free_world if published else leak_free_procedural_world)(
                spec, task, seed)
        if not task.applies_to(spec):
            fitting = ", ".join(t.id for t in tasks_for_world(spec))
            raise ValueError(f"Task {task_id!r} does not apply to world {spec.id} "
                             f"(it needs a world that is {task.kind.name}). "
                             f"Tasks for this world: {fitting}.")
        options: dict[str, Any] = ({"world_seed": int(world_seed)} if world_seed is not None
                                   else {"world": world_id})
        options["protocol"] = proto.name
        options["setup"] = setup
        return GravityEpisode(task, spec, proto, seed=seed, options=options, setup=setup)

    def audit_attacks(self) -> tuple[Any, ...]:
        from .attacks import ATTACKS

        return ATTACKS

    def keyed_episode(self, spec: EpisodeSpec, key: Key) -> GravityEpisode:
        """The keyed episode: the seed (the leak-free window, scale and boundness twin)
        and a procedural world's seed, given as `world_seed` N or `world` "proc-N" (one
        world either way, as without a key), are keyed. The episode keeps the public
        world name; a published world with `setup published` stays public by nature."""
        world = spec.options.get("world")
        if isinstance(world, str) and world.startswith("proc-") and world[5:].isdigit():
            drawn = self.keyed_option("world_seed", int(world[5:]), key)
            spec = EpisodeSpec(spec.suite, spec.task_id, spec.seed,
                               spec.options | {"world": f"proc-{drawn}"})
        episode = super().keyed_episode(spec, key)
        if world is not None:
            episode.world = episode.options["world"] = world
        elif spec.options.get("world_seed") is not None:
            episode.world = f"proc-{int(spec.options['world_seed'])}"
        return episode

    def public_by_nature(self, spec: EpisodeSpec) -> str | None:
        """A published world played as published (`--setup published`) draws nothing."""
        world = spec.options.get("world")
        if (spec.options.get("setup") == "published" and world in PUBLISHED_WORLDS):
            return "a published world under --setup published"
        return None

    def keyed_option(self, name: str, value: Any, key: Key) -> Any:
        """A keyed procedural world is of the same kind as the public one (Newtonian,
        drag, modified, unbound), so the plan's tasks, listed from the public seed,
        apply to it: the first keyed draw of that kind (the kind is public anyway, the
        tasks name it)."""
        if name != "world_seed":
            return super().keyed_option(name, value, key)
        kind = procedural_kind(int(value))
        for attempt in range(10_000):  # the rarest kind has odds 0.1: ~10 tries
            drawn = key.derive(self.name, "option", name, int(value), attempt)
            if procedural_kind(drawn) == kind:
                return drawn
        raise RuntimeError(f"no keyed {kind} world in 10000 draws")  # pragma: no cover

    def single_submit(self, spec: EpisodeSpec) -> bool:
        """Full observation hands the agent every data point up front; a budget needs the
        live `observe` tool."""
        return parse_protocol(spec.options.get("protocol", DEFAULT_PROTOCOL)).name == "full-obs"

    def plan(self, *, protocol: str = DEFAULT_PROTOCOL, tasks: Any = None, worlds: Any = None,
             world_seed: int | None = None, world_seeds: Any = None,
             setup: str = "leak-free", **unknown: Any) -> list[Case]:
        """The cases of a run: the published pairs (filtered by `tasks`/`worlds`), or
        every applicable task on the procedural world of `world_seed` (or of each seed
        of `world_seeds`, a list or a range such as "0-19"). A world seed picks a world
        (a case); the runner's `--seeds` pick the episode seeds."""
        if unknown:
            raise UnknownName(f"Unknown gravity option(s) {', '.join(sorted(unknown))}. "
                              "Options: protocol, tasks, worlds, world_seed, world_seeds, "
                              "setup.")
        proto = parse_protocol(protocol).name
        setup = _setup_option(setup)
        task_names, world_names = _names(tasks), _names(worlds)
        _check(task_names, TASK_IDS, "task")
        if world_seed is not None and world_seeds is not None:
            raise ValueError("Give either world_seed or world_seeds, not both.")
        if world_seed is not None:
            world_seeds = [int(world_seed)]
        elif isinstance(world_seeds, str):
            world_seeds = parse_seeds(world_seeds)
        elif world_seeds is not None and len(world_seeds) > MAX_SEEDS:
            raise ValueError(f"At most {MAX_SEEDS} procedural world seeds.")
        if world_seeds is not None:
            if world_names:
                raise ValueError("Give either worlds or procedural world seeds, not both.")
            return [Case(task.id, {"world_seed": int(n), "protocol": proto, "setup": setup})
                    for n in world_seeds
                    for task in tasks_for_world(get_world(world_seed=int(n)))
                    if task_names is None or task.id in task_names]
        _check(world_names, WORLD_IDS, "world")
        return [Case(task_id, {"world": world_id, "protocol": proto, "setup": setup})
                for task_id, world_id in published_pairs()
                if (task_names is None or task_id in task_names)
                and (world_names is None or world_id in world_names)]

    def summarize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Pass rate by task and by world; mean and max observations per episode."""
        by_task: dict[str, list[bool]] = defaultdict(list)
        by_world: dict[str, list[bool]] = defaultdict(list)
        observations = []
        for record in records:
            by_task[record["task_id"]].append(bool(record["passed"]))
            by_world[str(record.get("world"))].append(bool(record["passed"]))
            observations.append(float((record.get("usage") or {}).get("observations", 0)))

        def rates(groups: dict[str, list[bool]]) -> dict[str, dict[str, Any]]:
            return {key: {"n": len(v), "passed": sum(v), "pass_rate": sum(v) / len(v)}
                    for key, v in sorted(groups.items())}

        return {
            "pass_rate_by_task": rates(by_task),
            "pass_rate_by_world": rates(by_world),
            "mean_observations": sum(observations) / len(observations) if observations else 0.0,
            "max_observations": max(observations) if observations else 0.0,
        }

    def report_sections(self, records: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """For `discoverygym report`: each episode's observed times over the true
        separation curve (the first 12 episodes)."""
        return observation_sections(records)
