"""Scripted conversations: the shape of a deterministic stand-in for an LLM that plays
an episode through a model door's conversation (its tool calls and text), offline.

A policy is a generator: it yields a `Step` (tool calls, or a text-only reply) and
receives the list of `Reply`s to that step's tool calls. The Inspect door's scripted
model provider (doors/inspect/policies.py) runs them. They live in core because a
suite may declare its own expert in this shape (`SuiteEntry.conversation_expert`, e.g.
gravity's in suites/gravity/baselines/conversation.py), and a door never imports a
suite's baselines: it finds that expert through the registry."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Call:
    """A tool call. `arguments` is a dict, or a raw string (possibly invalid JSON)."""

    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True)
class Step:
    """What the policy says next: tool calls, or (when `calls` is empty) a text reply."""

    calls: tuple[Call, ...] = ()
    text: str = ""


@dataclass(frozen=True)
class Reply:
    """The result of one tool call as the model sees it."""

    text: str
    is_error: bool = False


@dataclass
class Context:
    """What a policy knows: the episode prompt, the tool names, and model arguments."""

    prompt: str
    tools: list[str]
    args: dict[str, Any] = field(default_factory=dict)


Policy = Callable[[Context], Generator[Step, list[Reply], None]]


@dataclass(frozen=True)
class ScriptedExpert:
    """A suite's scripted expert: `recognises(ctx)` says whether a conversation is one
    of the suite's episodes (a stand-in model is not told the suite), `play` is the
    policy."""

    recognises: Callable[[Context], bool]
    play: Policy


def python(code: str) -> Step:
    """A step that runs `code` in the episode's interpreter (the `python` tool)."""
    return Step((Call("python", {"code": code}),))


def tool(name: str, **arguments: Any) -> Step:
    """A step with one call of tool `name`."""
    return Step((Call(name, arguments),))


def json_line(text: str) -> Any:
    """The first line of `text` that parses as JSON (a python tool's printed result)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise ValueError(f"no JSON in tool output: {text[:300]!r}")
