"""Play one episode with a scripted agent. Runs in whichever process the executor
chooses; takes and returns plain data so it crosses process boundaries."""

from __future__ import annotations

import traceback
from typing import Any

from ..core import (
    AgentNotApplicable,
    Episode,
    EpisodeRecord,
    EpisodeSpec,
    is_privileged,
    make_agent,
    play_agent,
)


def play_scripted(spec: dict[str, Any], agent: str) -> dict[str, Any]:
    """Build the episode from `spec`, let the named agent solve it through its view,
    and return the record as a dict. An agent crash is recorded, never raised."""
    episode_spec = EpisodeSpec(**spec)
    return play_built(episode_spec.build(), episode_spec.suite, agent).to_dict()


def play_built(episode: Episode, suite: str, agent: str) -> EpisodeRecord:
    """Let the named agent of `suite` solve an episode already built, and return its
    record. An agent crash is recorded, never raised."""
    error = None
    player = None
    not_applicable = False
    try:
        player = make_agent(suite, agent)
        play_agent(player, episode)
    except AgentNotApplicable as exc:
        error, tb, not_applicable = f"agent does not apply: {exc}", None, True
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
    if not_applicable:
        record.details["agent_not_applicable"] = True
    return record
