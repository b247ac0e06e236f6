"""Per-suite limits and system prompts for LLM agents (one place, quoted in the README).

The system prompt is ours and the same for every episode of a suite; the episode's
own prompt (task, units, rules, answer format) is the first user message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...sandbox import SandboxConfig


@dataclass(frozen=True)
class AgentLimits:
    """Limits of one LLM episode: messages in the conversation, tokens (input +
    output), wall-clock seconds."""

    messages: int
    tokens: int
    time_s: int


# Gravity-Bench and MaD publish no LLM limits; these leave room for a budget-obs-100
# episode (ten observe calls, a few analysis steps) several times over. Stargazer's
# follow the published per-tier budgets (tokens and seconds; see its spec).
SUITE_LIMITS: dict[str, AgentLimits] = {
    "gravity": AgentLimits(messages=200, tokens=1_000_000, time_s=1800),
    "stargazer": AgentLimits(messages=300, tokens=900_000, time_s=1500),
    "mad": AgentLimits(messages=300, tokens=1_500_000, time_s=3600),
    "tpbench": AgentLimits(messages=100, tokens=500_000, time_s=1800),
    "packages": AgentLimits(messages=400, tokens=2_000_000, time_s=3600),
}
DEFAULT_LIMITS = AgentLimits(messages=200, tokens=1_000_000, time_s=1800)

# Stargazer: published budgets per tier (easy / medium / hard).
TIER_LIMITS: dict[str, dict[str, AgentLimits]] = {
    "stargazer": {
        "easy": AgentLimits(messages=300, tokens=200_000, time_s=600),
        "medium": AgentLimits(messages=300, tokens=450_000, time_s=900),
        "hard": AgentLimits(messages=300, tokens=900_000, time_s=1500),
    },
}


@dataclass(frozen=True)
class PythonLimits:
    """Limits of the agent's sandboxed interpreter: wall-clock seconds per execution
    and CPU seconds per interpreter process (a restart starts a fresh allowance)."""

    time_limit_s: float
    cpu_s: int
    memory_mb: int = 4096


# Fits in the sandbox take longer in some suites (Stargazer's Keplerian fits and
# nested sampling); the sandbox's own defaults (10 s, 60 CPU s) suit one-shot scripts.
PYTHON_LIMITS: dict[str, PythonLimits] = {
    "gravity": PythonLimits(time_limit_s=60, cpu_s=900),
    "stargazer": PythonLimits(time_limit_s=180, cpu_s=1800),
    "mad": PythonLimits(time_limit_s=120, cpu_s=1800),
    "tpbench": PythonLimits(time_limit_s=60, cpu_s=900),
    "packages": PythonLimits(time_limit_s=120, cpu_s=1800),
}
DEFAULT_PYTHON_LIMITS = PythonLimits(time_limit_s=60, cpu_s=900)


def sandbox_config(suite: str, **overrides: Any) -> SandboxConfig:
    """The agent interpreter's SandboxConfig for `suite` (PYTHON_LIMITS), with
    `overrides` (any SandboxConfig field) applied."""
    lim = PYTHON_LIMITS.get(suite, DEFAULT_PYTHON_LIMITS)
    values: dict[str, Any] = {"time_limit_s": lim.time_limit_s, "cpu_s": lim.cpu_s,
                              "memory_mb": lim.memory_mb}
    values.update(overrides)
    return SandboxConfig(**values)


def suite_limits(suite: str) -> AgentLimits:
    return SUITE_LIMITS.get(suite, DEFAULT_LIMITS)


def episode_limits(suite: str, options: dict[str, Any], tags: dict[str, Any] | None = None
                   ) -> AgentLimits:
    """The limits of one episode: the suite's, narrowed by tier where the suite has them."""
    tier = (tags or {}).get("tier") or options.get("tier")
    return TIER_LIMITS.get(suite, {}).get(str(tier), suite_limits(suite))


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

SUITE_NOTES: dict[str, str] = {
    "gravity": "Answers are always in SI units, whatever units the data are shown in.",
    "stargazer": "Fit every planet you find; submit the planet list in the stated format.",
    "mad": "The laws of this world may differ from the ones you know; infer them from data.",
    "tpbench": "Submit a Python function or expression exactly as the task's answer "
                "format says; it is verified automatically.",
    "packages": "Write your outputs where the task says; the evaluator checks them.",
}


def system_prompt(suite: str) -> str:
    """The system prompt for every episode of `suite`."""
    note = SUITE_NOTES.get(suite)
    return SYSTEM_PROMPT + (f"\n{note}\n" if note else "")
