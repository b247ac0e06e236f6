"""The rollout state shared by the Task (verifier side) and the episode's tool server.

The state travels whole: each tool call pulls it and pushes it back, and the last write
wins. Each field therefore has one writer at a time: the Task's request hook writes
`calls` and `refused` while a model turn commits, and the tool server writes `tools`,
`done` and `record_json` while it answers a call (the chat harness runs tools between
model turns, never during one)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from verifiers.v1 import State


class CallRef(BaseModel):
    """Which call: the model turn that proposed it (1 for the first assistant message)
    and its id, bounded (`calls.bounded_id`). A model may reuse an id in a later turn;
    the pair is the call's identity."""

    turn: int = 0
    id: str

    @property
    def key(self) -> str:
        return f"{self.turn}:{self.id}"


class ProposedCall(CallRef):
    """A tool call the model proposed, with its arguments in canonical JSON."""

    name: str
    arguments: str


class Refusal(CallRef):
    """A call the Task refused before it ran (unreadable arguments, unknown tool)."""

    name: str
    reason: str


class EpisodeState(State):
    calls: list[ProposedCall] = Field(default_factory=list)
    refused: list[Refusal] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    done: bool = False
    record_json: str | None = None
