"""Play one episode with a scripted agent. Runs in whichever process the executor
chooses; takes and returns plain data so it crosses process boundaries."""

from __future__ import annotations

import traceback
from typing import Any

from ..core import EpisodeSpec, is_privileged, make_agent, play_agent


def play_scripted(spec: dict[str, Any], agent: str) -> dict[str, Any]:
    """Build the episode from `spec`, let the named agent solve it through its view,
    and return the record as a dict. An agent crash is recorded, never raised."""
    episode_spec = EpisodeSpec(**spec)
    episode = episode_spec.build()
    error = None
    player = None
    try:
        player = make_agent(episode_spec.suite, agent)
        play_agent(player, episode)
    except Exception as exc:
        error = f"agent crashed: {type(exc).__name__}: {exc}"
        tb = traceback.format_exc(limit=8)
    else:
        tb = None
    record = episode.record(agent=agent, error=error)
    if is_privileged(player):
        record.details["privileged_agent"] = True
    if tb:
        record.details["agent_traceback"] = tb
    return record.to_dict()
