"""Limits and system prompts for LLM agents, read from each suite's declarations
(`Suite.agent_limits`, `tier_limits`, `python_limits`, `agent_note`).

The system prompt is ours and the same for every episode of a suite; the episode's
own prompt (task, units, rules, answer format) is the first user message."""

from __future__ import annotations

from typing import Any

from ...core import AgentLimits, PythonLimits, Suite, get_suite
from ...sandbox import SandboxConfig

__all__ = ["AgentLimits", "PythonLimits", "SYSTEM_PROMPT", "episode_limits", "sandbox_config",
           "suite_limits", "system_prompt"]


def _suite(suite: str | Suite) -> Suite:
    return get_suite(suite) if isinstance(suite, str) else suite


def sandbox_config(suite: str | Suite, **overrides: Any) -> SandboxConfig:
    """The agent interpreter's SandboxConfig for `suite` (its `python_limits`), with
    `overrides` (any SandboxConfig field) applied."""
    lim = _suite(suite).python_limits
    values: dict[str, Any] = {"time_limit_s": lim.time_limit_s, "cpu_s": lim.cpu_s,
                              "memory_mb": lim.memory_mb}
    values.update(overrides)
    return SandboxConfig(**values)


def suite_limits(suite: str | Suite) -> AgentLimits:
    return _suite(suite).agent_limits


def episode_limits(suite: str | Suite, options: dict[str, Any],
                   tags: dict[str, Any] | None = None) -> AgentLimits:
    """The limits of one episode: the suite's, narrowed by tier where the suite has them."""
    s = _suite(suite)
    tier = (tags or {}).get("tier") or options.get("tier")
    return s.tier_limits.get(str(tier), s.agent_limits)


SYSTEM_PROMPT = """\
You are a scientist working on a measurement-and-analysis problem in a benchmark \
called discoverygym. The user message describes your task, the units, the rules and \
the answer format.

How to work:
- Call the environment's tools to gather data. Each call may cost budget; the \
results tell you what you spent and what is left. A call with invalid input returns \
an error that costs nothing; read it, fix the call and go on.
- Use the `python` tool for every calculation. It is a persistent Python 3 \
interpreter (variables survive between calls) that already holds your data as \
variables (see the task); numpy (np), pandas (pd), scipy, sympy and astropy are \
available. It has no network and no access to files other than its own working \
directory. The value of a bare last expression is shown; print what you need to see.
- After each environment tool call the interpreter's data variables are refreshed.
- When you are confident, call `submit` with your final answer in the requested \
units and format. You may submit only as allowed by the task; an episode without a \
submission scores as failed.
"""

def system_prompt(suite: str | Suite) -> str:
    """The system prompt for every episode of `suite`: the shared one and the suite's
    own note."""
    note = _suite(suite).agent_note
    return SYSTEM_PROMPT + (f"\n{note}\n" if note else "")
