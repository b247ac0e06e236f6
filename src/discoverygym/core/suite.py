"""The Suite contract and the registry of suites and agents (lazy, by import path,
so `core` imports no suite and a missing optional extra only hides its suite)."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from .episode import Episode, EpisodeView
from .errors import UnknownName
from .grid import Case, checked_seeds
from .keys import Key
from .limits import AgentLimits, PythonLimits


@dataclass(frozen=True)
class TaskInfo:
    """A task as listed to users: id, a one-line description, and tags (tier,
    difficulty, domain, the worlds it applies to, ...)."""

    id: str
    description: str = ""
    tags: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything needed to rebuild an episode bit for bit in any process.

    `key`, when given, keys every draw (see `Suite.keyed_episode`): the episode is then
    rebuilt only by whoever holds the key. The key is never part of `to_dict()` (what
    runs, records and exports write down); `to_job()` carries it to worker processes."""

    suite: str
    task_id: str
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    key: Key | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "task_id": self.task_id, "seed": self.seed,
                "options": dict(self.options)}

    def to_job(self) -> dict[str, Any]:
        """`to_dict()` plus the key object (pickled to a worker, never written down:
        a Key's repr and str hide its secret)."""
        job = self.to_dict()
        if self.key is not None:
            job["key"] = self.key
        return job

    def with_key(self, key: Key | None) -> EpisodeSpec:
        return EpisodeSpec(self.suite, self.task_id, self.seed, dict(self.options), key)

    def build(self) -> Episode:
        """The episode this spec describes; every door builds its episodes here (may be
        CPU-heavy: call it off an event loop)."""
        suite = get_suite(self.suite)
        if self.key is None:
            return suite.episode(self.task_id, seed=self.seed, **self.options)
        episode = suite.keyed_episode(self, self.key)
        # the record names the public identity and the key's id, never the draws
        episode.seed = self.seed
        episode.options.update({name: self.options[name] for name in suite.keyed_options
                                if name in self.options})
        episode.key_id = self.key.id
        return episode


def cross(suite: str, cases: Sequence[Case], seeds: Iterable[int], *,
          key: Key | None = None) -> list[EpisodeSpec]:
    """Every case with every seed, case by case (a case's seeds side by side), each
    (task, options, seed) once; keyed by `key` when given."""
    seed_list = checked_seeds(seeds)
    seen: dict[str, Case] = {}
    for case in cases:
        if not isinstance(case, Case):
            raise TypeError(f"{suite}'s plan() gave {type(case).__name__}, not a Case: a plan "
                            "holds cases (task, options); the runner gives the seeds")
        seen.setdefault(json.dumps([case.task_id, case.options], sort_keys=True,
                                   default=str), case)
    return [EpisodeSpec(suite, case.task_id, seed, dict(case.options), key)
            for case in seen.values() for seed in seed_list]


def plan_episodes(suite: Suite, options: dict[str, Any] | None = None,
                  seeds: Iterable[int] | None = None, *,
                  key: Key | None = None) -> list[EpisodeSpec]:
    """The episodes of a run of `suite` with these (parsed) options: its plan crossed
    with `seeds` (default: the suite's `default_seeds`)."""
    cases = suite.plan(**(options or {}))
    return cross(suite.name, cases, suite.default_seeds if seeds is None else seeds, key=key)


@dataclass(frozen=True)
class RunOption:
    """A suite-specific option of `discoverygym run SUITE` (e.g. `--protocol`).
    `parse` turns the command-line string into the value the suite's `plan` takes."""

    name: str
    help: str
    parse: Callable[[str], Any] = str
    default: Any = None


class Suite(ABC):
    """A family of tasks. Subclasses are cheap to construct; heavy work (simulation,
    data loading) happens lazily and is cached."""

    name: str = ""
    description: str = ""
    run_options: tuple[RunOption, ...] = ()
    #: What a model door gives an LLM agent on this suite: conversation limits (narrowed
    #: per `tags["tier"]` where `tier_limits` names the tier), interpreter limits and a
    #: one-line note appended to the shared system prompt.
    agent_limits: AgentLimits = AgentLimits()
    tier_limits: dict[str, AgentLimits] = {}
    python_limits: PythonLimits = PythonLimits()
    agent_note: str = ""
    #: The seeds a run plays each case with when `--seeds` is not given.
    default_seeds: tuple[int, ...] = (0,)
    #: Task tags that a long per-task table rolls up by (stargazer: tier): past
    #: ROLLUP_OVER tasks, the run's table and the HTML report show one row per value
    #: (`rollup_labels`); summary.json keeps every task.
    rollup_tags: tuple[str, ...] = ()
    #: Options that are themselves seeds (a procedural world's seed): with a key they are
    #: keyed too, and records keep the public value.
    keyed_options: tuple[str, ...] = ()
    #: Whether the episode seed alone draws every hidden value of a task (its truth and
    #: world), so that two seeds are two different problems. The verifiers door trains
    #: on such a suite's tasks as they are; a suite without it trains only on the
    #: procedural worlds of a `world_seed` run option, never on a published task.
    seed_draws_truth: bool = False

    @abstractmethod
    def tasks(self) -> list[TaskInfo]:
        """All task descriptors."""

    @abstractmethod
    def episode(self, task_id: str, *, seed: int = 0, **options: Any) -> Episode:
        """Build one episode. Unknown tasks or options raise UnknownName/ValueError."""

    @abstractmethod
    def plan(self, **options: Any) -> list[Case]:
        """The cases (task, options; no seed) a run with these (already parsed) options
        asks; the runner crosses them with the seeds (`cross`)."""

    def episodes(self, seeds: Iterable[int] | None = None, *, key: Key | None = None,
                 **options: Any) -> list[EpisodeSpec]:
        """The plan for `options` crossed with `seeds` (default `default_seeds`)."""
        return plan_episodes(self, options, seeds, key=key)

    def keyed_episode(self, spec: EpisodeSpec, key: Key) -> Episode:
        """`spec`'s episode with every draw keyed: the episode seed becomes
        HMAC(key, suite, task, seed) and each `keyed_options` value HMAC(key, suite,
        option, value), so nobody without the key can rebuild the episode from public
        code and seeds. Options other than seeds stay out of the episode's draw seed, so
        one seed gives the same draws under every protocol, keyed or not (paired
        comparisons). Suites whose draws do not all come from `seed` override this."""
        options = dict(spec.options)
        for name in self.keyed_options:
            if options.get(name) is not None:
                options[name] = self.keyed_option(name, options[name], key)
        return self.episode(spec.task_id, seed=key.derive(self.name, spec.task_id, spec.seed),
                            **options)

    def public_by_nature(self, spec: EpisodeSpec) -> str | None:
        """Why `spec`'s episode stays public with a key (a published problem, a real
        system, a published world as published), or None when a key holds it out. Said
        in `calibrate`'s verdicts and the README; tested against the keyed draws."""
        return None

    def keyed_option(self, name: str, value: Any, key: Key) -> Any:
        """The keyed value of an option that is a seed (one of `keyed_options`)."""
        return key.derive(self.name, "option", name, value)

    def single_submit(self, spec: EpisodeSpec) -> bool:
        """Whether `spec`'s episode can be played with no live tool: everything the agent
        needs is in its prompt, its workspace and the read-only folders of
        `sandbox_dirs`, and it answers with one `submit` call (plus, where the episode
        has them, the files it leaves in its writable folders). Such episodes can leave
        the process as file tasks (`discoverygym export harbor`); the others need their
        tools served live. Default: no."""
        return False

    def shared_work(self, spec: EpisodeSpec) -> str | None:
        """A label naming the episodes that reuse one another's work inside one process
        (a per-process cache the first fills and the others read). The process and Ray
        executors play the episodes of one label one after another on one worker, so
        that work is done once instead of once per worker; records do not change. Default: None, no
        such sharing."""
        return None

    def default_episodes(self) -> list[EpisodeSpec]:
        """The canonical episode set, as counted by `discoverygym list`: the default plan
        on the default seeds."""
        return self.episodes()

    def summarize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Suite-specific aggregates added to summary.json (by default none)."""
        return {}

    def summary_renderable(self, suite_summary: dict[str, Any]) -> Any:
        """What `discoverygym run` prints under its pass-rate table from this suite's
        `summarize` output (e.g. a rich Table of the suite's own aggregates), or None."""
        return None

    def report_sections(self, records: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """Plots for `discoverygym report`: (title, self-contained HTML fragment) pairs.
        Suites override this; the report module supplies the plotting helpers."""
        return []

    def audit_case(self, scope: dict[str, Any]) -> Case:
        """The case `discoverygym audit` plays the platform's attacks on (hostile tool
        arguments, the interpreter), on the audit's seeds. `scope` holds the audit
        options that narrow the target (`--package`, `--problems`); a suite that takes
        none refuses them. Default: the first case of the default plan."""
        if scope:
            raise ValueError(f"The audit of {self.name} takes no "
                             f"{', '.join('--' + k for k in scope)}.")
        return self.plan()[0]

    def audit_attacks(self) -> tuple[Any, ...]:
        """The attack families (core.audit_registry.AttackFamily) this suite declares
        against itself, kept beside what they attack (the suite's attacks.py). The
        platform's families (arguments, interpreter, ...) apply to every suite on top.
        Default: none."""
        return ()

    def audit_code_answer(self, spec: EpisodeSpec, code: str) -> dict[str, Any] | None:
        """For the audit's attacks on a door's verifier (Harbor's): an answer to `spec`'s
        episode whose scoring runs the Python source `code` as the agent's own, or None
        where no answer runs as code (the default)."""
        return None

    def parse_options(self, raw: dict[str, str],
                      command_options: Iterable[str] = ()) -> dict[str, Any]:
        """Parse command-line strings into typed options; reject unknown names, naming
        the closest of the suite's options and the command's own (`command_options`)."""
        known = {opt.name: opt for opt in self.run_options}
        check_option_names(self.name, raw, tuple(known), command_options)
        return {key.replace("-", "_"): known[key.replace("-", "_")].parse(value)
                for key, value in raw.items()}


def check_option_names(suite: str, raw: Iterable[str], known: Iterable[str],
                       command_options: Iterable[str] = ()) -> None:
    """Refuse the first name in `raw` that is not one of `known` (a suite's run options),
    naming the closest of them and of the command's own options."""
    known = tuple(known)
    command_options = tuple(command_options)
    for key in raw:
        name = key.replace("-", "_")
        if name in known:
            continue
        if name in RETIRED_OPTIONS:
            raise UnknownName(RETIRED_OPTIONS[name])
        allowed = ", ".join("--" + n.replace("_", "-") for n in known)
        flags = ["--" + n.replace("_", "-") for n in (*known, *command_options)]
        close = difflib.get_close_matches("--" + key, flags, n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]}?" if close else ""
        own = ", ".join("--" + n.replace("_", "-") for n in command_options)
        raise UnknownName(f"Suite '{suite}' has no option --{key}.{hint} "
                          f"Options: {allowed or 'none'}"
                          f"{f'; the command also takes {own}' if own else ''}.")


def check_declared_option_names(suite: str, raw: Iterable[str],
                                command_options: Iterable[str] = ()) -> None:
    """`check_option_names` from the registry row alone, before the suite imports; a
    suite whose row declares no options is checked later, by its own `parse_options`."""
    load_plugins()
    entry = SUITES.get(suite)
    if entry is not None and entry.options is not None:
        check_option_names(suite, raw, entry.options, command_options)


#: Options that are gone, and what replaced them (said in one line when given).
RETIRED_OPTIONS = {
    "attempts": "--attempts is gone: the runner plays each case once per seed; for K "
                "attempts give --seeds 0-(K-1), e.g. --seeds 0-4 for five.",
}


class Agent(Protocol):
    """Anything that can play an episode through its view."""

    def solve(self, view: EpisodeView) -> None: ...


@runtime_checkable
class PrivilegedAgent(Protocol):
    """A calibration agent that must see the episode itself (an oracle that submits the
    truth, or fits a law whose form it is told). Its records are flagged
    `details.privileged_agent` so they never pass for a real agent's."""

    privileged: bool

    def solve_privileged(self, episode: Episode) -> None: ...


def is_privileged(agent: Any) -> bool:
    return bool(getattr(agent, "privileged", False)) and isinstance(agent, PrivilegedAgent)


def play_agent(agent: Any, episode: Episode) -> None:
    """Let `agent` play `episode`: through its view, or the episode itself for a
    privileged agent."""
    if is_privileged(agent):
        agent.solve_privileged(episode)
    else:
        agent.solve(episode.view())


@dataclass(frozen=True)
class SuiteEntry:
    """What the registry knows of a suite before importing it: its class ("module:Class"),
    its Gymnasium environment name (`discoverygym/<gym_name>-v1`); if it has
    sub-commands of its own, its typer app ("module:app") mounted as `discoverygym
    <cli_name>`; the module holding its scripted agents (`AGENTS`, `CALIBRATION`;
    see `agent_table`); and, if it has one, its scripted expert for the model doors
    ("module:attr", a `core.conversation.ScriptedExpert`); and its run options' names,
    where it declares them, so that a mistyped option is refused before the suite's
    modules load (the suite's own `run_options` must name the same ones: a test holds
    them together); and the top-level modules its episodes need (its extra's), so that a
    machine without them hears so from `run` in the process that plans the run, not from
    every worker (`check_requirements`)."""

    path: str
    gym_name: str
    cli: str | None = None
    cli_name: str | None = None
    agents: str | None = None
    conversation_expert: str | None = None
    options: tuple[str, ...] | None = None
    requires: tuple[str, ...] = ()


#: The package where the built-in suites declare their rows (its `ENTRIES`, each suite's
#: row written in the suite's own folder), loaded first, like a plugin, by `load_plugins`:
#: so core names no suite.
BUILTIN_SUITES_PACKAGE = "discoverygym.suites"

# Suites by name, filled by `load_plugins` (the built-ins, then plugins) and
# `register_suite`. A suite's modules are imported only when asked for.
SUITES: dict[str, SuiteEntry] = {}


def register_suite(name: str, path: str, *, gym_name: str | None = None,
                   cli: str | None = None, cli_name: str | None = None) -> None:
    """Register a suite class by import path ("module:Class"), e.g. from a plugin. Its
    Gymnasium name defaults to the suite name in title case."""
    gym_name = gym_name or name.replace("-", " ").title().replace(" ", "")
    SUITES[name] = SuiteEntry(path, gym_name, cli, cli_name)
    get_suite.cache_clear()


#: How many tasks a per-task table shows before it rolls up (`Suite.rollup_tags`).
ROLLUP_OVER = 24


def rollup_labels(suite: Suite, task_ids: Iterable[str]) -> dict[str, str] | None:
    """Each task's group ("easy", or "classical · normal" for two tags) where the
    suite rolls up and there are more than ROLLUP_OVER tasks; else None (one row per
    task). A task the suite does not list (another bank's) goes under "other"."""
    ids = list(dict.fromkeys(task_ids))
    if not suite.rollup_tags or len(ids) <= ROLLUP_OVER:
        return None
    tags = {t.id: t.tags for t in suite.tasks()}
    return {tid: " · ".join(str(tags[tid].get(k, "?")) for k in suite.rollup_tags)
            if tid in tags else "other" for tid in ids}


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A package's module-level `__getattr__` that imports each name of `exports`
    (name -> relative submodule) on first use: a suite's __init__ declares its registry
    row without importing the suite's heavy modules (REBOUND, JAX, astropy)."""
    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)
    return __getattr__


_EXTRA_AGENTS: dict[str, dict[str, str]] = {}
_EXTRA_CALIBRATION: dict[str, dict[str, list[str]]] = {}

# The roles of `discoverygym calibrate` (see discoverygym.calibrate for the verdicts).
CALIBRATION_ROLES = ("oracle", "baselines", "no_science", "trivial")


def register_agents(suite: str, table: dict[str, str],
                    calibration: dict[str, list[str]] | None = None) -> None:
    """Register scripted agents ("name" -> "module:Class") for a suite, e.g. from a plugin,
    and optionally which of them `discoverygym calibrate` runs in which role (the shape of
    a suite's `baselines.CALIBRATION`: {"oracle": [...], "baselines": [...],
    "no_science": [...], "trivial": [...]})."""
    _EXTRA_AGENTS.setdefault(suite, {}).update(table)
    if calibration is not None:
        _EXTRA_CALIBRATION[suite] = {role: list(calibration.get(role, ()))
                                     for role in CALIBRATION_ROLES}


_plugins_loaded = False


def load_plugins() -> None:
    """Import the plugin modules named in DISCOVERYGYM_PLUGINS (comma separated) and
    the `discoverygym.plugins` entry points. Plugins call `register_suite` /
    `register_agents`. Runs once per process; worker processes inherit the variable."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    _register_builtins()
    for module in filter(None, os.environ.get("DISCOVERYGYM_PLUGINS", "").split(",")):
        importlib.import_module(module.strip())
    for entry in entry_points(group="discoverygym.plugins"):
        entry.load()


def _register_builtins() -> None:
    """Put the built-in suites' rows first in SUITES, in their declared order; a suite
    registered earlier under a built-in's name keeps its row (as it did when core held
    the built-ins' table)."""
    builtins = importlib.import_module(BUILTIN_SUITES_PACKAGE).ENTRIES
    registered = dict(SUITES)
    SUITES.clear()
    SUITES.update(builtins)
    SUITES.update(registered)
    get_suite.cache_clear()


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def suite_names() -> list[str]:
    load_plugins()
    return list(SUITES)


@cache
def get_suite(name: str) -> Suite:
    """The suite called `name` (one instance per process)."""
    load_plugins()
    if name not in SUITES:
        raise UnknownName(f"Unknown suite {name!r}. Suites: {', '.join(SUITES)}.")
    return _load(SUITES[name].path)()


def check_requirements(name: str) -> None:
    """ModuleNotFoundError naming the first module `name`'s episodes need (its row's
    `requires`) that cannot be imported; found, not loaded. `run` and `list` ask before
    playing or listing; other callers (a door planning splits) need no extra to plan."""
    load_plugins()
    entry = SUITES.get(name)
    for module in entry.requires if entry is not None else ():
        _require(module)


def _require(module: str) -> None:
    """ModuleNotFoundError (naming `module`) unless it can be imported; found, not loaded."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def available_suites() -> dict[str, Suite | Exception]:
    """Every registered suite, or the import error that hides it (e.g. a missing extra)."""
    load_plugins()
    out: dict[str, Suite | Exception] = {}
    for name in list(SUITES):
        try:
            check_requirements(name)
            out[name] = get_suite(name)
        except (ImportError, AttributeError) as exc:
            out[name] = exc
    return out


def _baselines_module(suite: str) -> Any:
    """The module its registry row names for the suite's agents (`SuiteEntry.agents`),
    or None for a suite without one (a plugin registers its agents instead)."""
    entry = SUITES.get(suite)
    if entry is None or entry.agents is None:
        return None
    return importlib.import_module(entry.agents)


def agent_table(suite: str) -> dict[str, str]:
    """Scripted agents of a suite: name -> "module:attribute". A suite's agents live in
    its own folder, in the module its row names (`SuiteEntry.agents`, the built-ins'
    `baselines`), as a dict named AGENTS; plugins add theirs with `register_agents`."""
    load_plugins()
    table: dict[str, str] = {}
    module = _baselines_module(suite)
    if module is not None:
        table.update(getattr(module, "AGENTS", {}))
    table.update(_EXTRA_AGENTS.get(suite, {}))
    return table


def calibration_table(suite: str) -> dict[str, list[str]] | None:
    """Which agents `discoverygym calibrate` runs in which role: the suite's
    `baselines.CALIBRATION`, or what a plugin gave `register_agents`; None if neither
    declares one. Every role is present (an empty list where none was named)."""
    load_plugins()
    declared = _EXTRA_CALIBRATION.get(suite)
    if declared is None:
        module = _baselines_module(suite)
        declared = getattr(module, "CALIBRATION", None) if module is not None else None
    if declared is None:
        return None
    unknown = set(declared) - set(CALIBRATION_ROLES)
    if unknown:
        raise ValueError(f"{suite}'s CALIBRATION has unknown role(s) {sorted(unknown)}; "
                         f"roles: {', '.join(CALIBRATION_ROLES)}.")
    return {role: list(declared.get(role, ())) for role in CALIBRATION_ROLES}


def conversation_expert(ctx: Any) -> Any:
    """The scripted expert (`core.conversation.ScriptedExpert`) of the first registered
    suite that declares one recognising the conversation `ctx`, or None."""
    load_plugins()
    for entry in list(SUITES.values()):
        if entry.conversation_expert is not None:
            expert = _load(entry.conversation_expert)
            if expert.recognises(ctx):
                return expert
    return None


def agent_class(suite: str, name: str) -> Any:
    """The class of `suite`'s scripted agent `name`, imported (an ImportError names the
    module of a missing extra)."""
    table = agent_table(suite)
    if name not in table:
        raise UnknownName(
            f"Unknown agent {name!r} for suite '{suite}'. Agents: {', '.join(table) or 'none'}.")
    return _load(table[name])


def make_agent(suite: str, name: str, **kwargs: Any) -> Agent:
    return agent_class(suite, name)(**kwargs)
