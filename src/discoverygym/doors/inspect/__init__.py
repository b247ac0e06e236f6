"""Inspect AI front-end: every suite as an Inspect task, the sandboxed interpreter as
a tool, the EpisodeRecord in the score's metadata, and a scripted model provider
(`discoverygym/<policy>`) for offline runs."""

from .limits import AgentLimits, system_prompt
from .prices import PRICES_USD_PER_MTOK, cost_usd, price_table
from .provider import ScriptedPolicyAPI
from .task import SESSIONS, episode_agent, episode_record, sample_id, suite_task

__all__ = [
    "PRICES_USD_PER_MTOK", "SESSIONS", "AgentLimits", "ScriptedPolicyAPI",
    "cost_usd", "episode_agent", "episode_record", "price_table", "sample_id", "suite_task",
    "system_prompt",
]
