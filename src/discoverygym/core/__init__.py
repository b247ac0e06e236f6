"""The contract every suite implements and every agent and adapter talks to."""

from .budget import Budget
from .episode import Episode, EpisodeView
from .errors import DiscoveryGymError, EpisodeFinished, ToolInputError, UnknownName
from .record import SCHEMA_VERSION, EpisodeRecord, Score, Usage, episode_key
from .suite import (
    CALIBRATION_ROLES,
    SUITES,
    Agent,
    EpisodeSpec,
    RunOption,
    Suite,
    TaskInfo,
    agent_table,
    available_suites,
    calibration_table,
    get_suite,
    load_plugins,
    make_agent,
    register_agents,
    register_suite,
    suite_names,
)
from .tools import ToolResult, ToolSpec, validate_arguments

__all__ = [
    "CALIBRATION_ROLES", "Agent", "Budget", "DiscoveryGymError", "Episode", "EpisodeFinished", "EpisodeRecord",
    "EpisodeSpec", "EpisodeView", "RunOption", "SCHEMA_VERSION", "SUITES", "Score", "Suite",
    "TaskInfo", "ToolInputError", "ToolResult", "ToolSpec", "Usage", "UnknownName",
    "agent_table", "available_suites", "calibration_table", "episode_key", "get_suite", "load_plugins", "make_agent",
    "register_agents", "register_suite",
    "suite_names", "validate_arguments",
]
