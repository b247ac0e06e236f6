"""The Suite contract and the registry of suites and agents (lazy, by import path,
so `core` imports no suite and a missing optional extra only hides its suite)."""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from .episode import Episode, EpisodeView
from .errors import UnknownName
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
    """Everything needed to rebuild an episode bit for bit in any process."""

    suite: str
    task_id: str
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "task_id": self.task_id, "seed": self.seed,
                "options": dict(self.options)}

    def build(self) -> Episode:
        """The episode this spec describes; every door builds its episodes here (may be
        CPU-heavy: call it off an event loop)."""
        return get_suite(self.suite).episode(self.task_id, seed=self.seed, **self.options)


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
    def plan(self, **options: Any) -> list[EpisodeSpec]:
        """The episodes a run with these (already parsed) options consists of."""

    def single_submit(self, spec: EpisodeSpec) -> bool:
        """Whether `spec`'s episode can be played with no live tool: everything the agent
        needs is in its prompt, its workspace and the read-only folders of
        `sandbox_dirs`, and it answers with one `submit` call (plus, where the episode
        has them, the files it leaves in its writable folders). Such episodes can leave
        the process as file tasks (`discoverygym export harbor`); the others need their
        tools served live. Default: no."""
        return False

    def default_episodes(self) -> list[EpisodeSpec]:
        """The canonical episode set, as counted by `discoverygym list`."""
        return self.plan()

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

    def parse_options(self, raw: dict[str, str]) -> dict[str, Any]:
        """Parse command-line strings into typed options; reject unknown names."""
        known = {opt.name: opt for opt in self.run_options}
        parsed: dict[str, Any] = {}
        for key, value in raw.items():
            name = key.replace("-", "_")
            if name not in known:
                allowed = ", ".join("--" + o.name.replace("_", "-") for o in self.run_options)
                raise UnknownName(
                    f"Suite '{self.name}' has no option --{key}. Options: {allowed or 'none'}.")
            parsed[name] = known[name].parse(value)
        return parsed


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
    its Gymnasium environment name (`discoverygym/<gym_name>-v1`) and, if it has
    sub-commands of its own, its typer app ("module:app") mounted as `discoverygym
    <cli_name>`."""

    path: str
    gym_name: str
    cli: str | None = None
    cli_name: str | None = None


# Suites by name. Importing happens only when asked for.
SUITES: dict[str, SuiteEntry] = {
    "gravity": SuiteEntry("discoverygym.suites.gravity:GravitySuite", "Gravity"),
    "stargazer": SuiteEntry("discoverygym.suites.stargazer:StargazerSuite", "Stargazer"),
    "mad": SuiteEntry("discoverygym.suites.mad:MadSuite", "Mad"),
    "tpbench": SuiteEntry("discoverygym.suites.tpbench:TPBenchSuite", "TPBench",
                          cli="discoverygym.suites.tpbench.cli:tpbench_app", cli_name="tpbench"),
    "packages": SuiteEntry("discoverygym.suites.packages:PackagesSuite", "Packages",
                           cli="discoverygym.suites.packages.cli:package_app",
                           cli_name="package"),
}


def register_suite(name: str, path: str, *, gym_name: str | None = None,
                   cli: str | None = None, cli_name: str | None = None) -> None:
    """Register a suite class by import path ("module:Class"), e.g. from a plugin. Its
    Gymnasium name defaults to the suite name in title case."""
    gym_name = gym_name or name.replace("-", " ").title().replace(" ", "")
    SUITES[name] = SuiteEntry(path, gym_name, cli, cli_name)
    get_suite.cache_clear()


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
    for module in filter(None, os.environ.get("DISCOVERYGYM_PLUGINS", "").split(",")):
        importlib.import_module(module.strip())
    for entry in entry_points(group="discoverygym.plugins"):
        entry.load()


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def suite_names() -> list[str]:
    return list(SUITES)


@cache
def get_suite(name: str) -> Suite:
    """The suite called `name` (one instance per process)."""
    load_plugins()
    if name not in SUITES:
        raise UnknownName(f"Unknown suite {name!r}. Suites: {', '.join(SUITES)}.")
    return _load(SUITES[name].path)()


def available_suites() -> dict[str, Suite | Exception]:
    """Every registered suite, or the import error that hides it (e.g. a missing extra)."""
    load_plugins()
    out: dict[str, Suite | Exception] = {}
    for name in list(SUITES):
        try:
            out[name] = get_suite(name)
        except (ImportError, AttributeError) as exc:
            out[name] = exc
    return out


def _baselines_module(suite: str) -> Any:
    """`discoverygym.suites.<suite>.baselines`, or None for a suite without one (a plugin)."""
    module_name = f"discoverygym.suites.{suite.replace('-', '_')}.baselines"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise
        return None


def agent_table(suite: str) -> dict[str, str]:
    """Scripted agents of a suite: name -> "module:attribute". A suite's agents live in
    its own folder, `discoverygym.suites.<suite>.baselines`, as a dict named AGENTS;
    plugins add theirs with `register_agents`."""
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


def make_agent(suite: str, name: str, **kwargs: Any) -> Agent:
    table = agent_table(suite)
    if name not in table:
        raise UnknownName(
            f"Unknown agent {name!r} for suite '{suite}'. Agents: {', '.join(table) or 'none'}.")
    return _load(table[name])(**kwargs)
