"""Limits a suite declares for agents that play it through a model door: the
conversation (messages, tokens, seconds) and the sandboxed interpreter."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AgentLimits:
    """Limits of one LLM episode: messages in the conversation, tokens (input +
    output), wall-clock seconds."""

    messages: int = 200
    tokens: int = 1_000_000
    time_s: int = 1800


@dataclass(frozen=True)
class PythonLimits:
    """Limits of the agent's sandboxed interpreter: wall-clock seconds per execution
    and CPU seconds per interpreter process (a restart starts a fresh allowance)."""

    time_limit_s: float = 60
    cpu_s: int = 900
    memory_mb: int = 4096
