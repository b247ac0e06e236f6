"""The contract every suite implements and every agent and adapter talks to."""

from .budget import Budget
from .episode import Episode, EpisodeView
from .errors import (
    AgentNotApplicable,
    DiscoveryGymError,
    EpisodeFinished,
    ToolInputError,
    UnknownName,
)
from .grid import Case
from .limits import AgentLimits, PythonLimits
from .record import SCHEMA_VERSION, EpisodeRecord, Score, Usage, episode_key
from .suite import (
    CALIBRATION_ROLES,
    SUITES,
    Agent,
    EpisodeSpec,
    PrivilegedAgent,
    RunOption,
    Suite,
    SuiteEntry,
    TaskInfo,
    agent_table,
    available_suites,
    calibration_table,
    cross,
    get_suite,
    is_privileged,
    load_plugins,
    make_agent,
    plan_episodes,
    play_agent,
    register_agents,
    register_suite,
    suite_names,
)
from .tools import ToolResult, ToolSpec, validate_arguments

__all__ = [
    "CALIBRATION_ROLES", "Agent", "Case", "AgentLimits", "AgentNotApplicable", "Budget", "DiscoveryGymError", "Episode", "EpisodeFinished", "EpisodeRecord",
    "EpisodeSpec", "EpisodeView", "PrivilegedAgent", "PythonLimits", "RunOption", "SCHEMA_VERSION", "SUITES", "Score", "Suite", "SuiteEntry",
    "TaskInfo", "ToolInputError", "ToolResult", "ToolSpec", "Usage", "UnknownName",
    "agent_table", "available_suites", "calibration_table", "cross", "episode_key", "get_suite", "is_privileged", "load_plugins",
    "make_agent", "plan_episodes", "play_agent", "register_agents", "register_suite",
    "suite_names", "validate_arguments",
]
