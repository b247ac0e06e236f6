"""The rollout state shared by the Task (verifier side) and the episode's tool server.

The state travels whole: each tool call pulls it and pushes it back, and the last write
wins. Each field therefore has one writer at a time: the Task's request hook writes
`calls` and `refused` while a model turn commits, and the tool server writes `tools`,
`done` and `record_json` while it answers a call (the chat harness runs tools between
model turns, never during one)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from verifiers.v1 import State


class ProposedCall(BaseModel):
    """A tool call the model proposed: its id and the arguments in canonical JSON."""

    id: str
    name: str
    arguments: str


class Refusal(BaseModel):
    """A call the Task refused before it ran (unreadable arguments, unknown tool)."""

    id: str
    name: str
    reason: str


class EpisodeState(State):
    calls: list[ProposedCall] = Field(default_factory=list)
    refused: list[Refusal] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    done: bool = False
    record_json: str | None = None
