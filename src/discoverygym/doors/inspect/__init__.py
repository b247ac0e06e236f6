"""Inspect AI front-end: every suite as an Inspect task, the sandboxed interpreter as
a tool, the EpisodeRecord in the score's metadata, and a scripted model provider
(`discoverygym/<policy>`) for offline runs.

The names below load on first use, so that `discoverygym run --model` can check the
command and the model's endpoint (`endpoint.py`) before Inspect itself is imported."""

from ...core.suite import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "AgentLimits": ".limits", "system_prompt": ".limits",
    "PRICES_USD_PER_MTOK": ".prices", "cost_usd": ".prices", "price_table": ".prices",
    "ScriptedPolicyAPI": ".provider",
    "SESSIONS": ".task", "episode_agent": ".task", "episode_record": ".task",
    "sample_id": ".task", "suite_task": ".task",
})

__all__ = [
    "PRICES_USD_PER_MTOK", "SESSIONS", "AgentLimits", "ScriptedPolicyAPI",
    "cost_usd", "episode_agent", "episode_record", "price_table", "sample_id", "suite_task",
    "system_prompt",
]
