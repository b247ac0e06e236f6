"""discoverygym as a verifiers (v1) environment: every registered suite, plugins
included, as a `vf.Taskset` whose tasks each get a live episode in their own tool
server (`EpisodeToolset`).

The Task's reward is the episode's score (from the record the tool server leaves in the
rollout state), its metrics what was spent, its stop the end of the episode; the record
itself goes into `trace.info["record"]`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.harnesses.null import NullHarness

from ...core import AgentLimits, EpisodeSpec, get_suite
from ...core.bounded import UnsafeInput, clip, loads, quote
from ...core.record import episode_key
from .calls import bounded_id, canonical
from .selection import split_specs
from .state import EpisodeState, ProposedCall, Refusal
from .toolset import NO_ANSWER, EpisodeToolset, EpisodeToolsetConfig, unbuilt_record

#: Call arguments nested deeper than this end the rollout (`unreadable_turn`): far below
#: the depth at which verifiers fails to decode them, far above any tool's.
MAX_CARRIED_DEPTH = 200
DROPPED_TURN = (f"[discoverygym: this turn's tool-call arguments nest deeper than "
                f"{MAX_CARRIED_DEPTH} levels; the turn was dropped and the episode ends "
                "without an answer]")
USAGE_METRICS = ("observations", "cost", "submissions", "tool_calls", "tool_errors")


class DiscoveryData(vf.TaskData):
    """Everything needed to rebuild the episode bit for bit in the tool server."""

    suite: str
    task_id: str
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict)
    max_turns: int | None = None
    """The suite's conversation limit (`AgentLimits.messages`), as model turns."""
    max_tokens: int | None = None
    """The suite's token limit (input and output)."""
    key_id: str | None = None
    """The id of the key that draws the episode (the eval split), never the key: the
    tool server takes the key from its environment and checks it against this id."""


class DiscoveryTaskConfig(vf.TaskConfig):
    tools: EpisodeToolsetConfig = EpisodeToolsetConfig()


def _refusal_text(name: str, reason: str) -> str:
    # The wording of `Episode.refuse`, which counts the same call in the tool server.
    return (f"Invalid input to {quote(name, 80)}: {clip(reason, 300)}. Nothing was "
            "charged.")


class DiscoveryTask(vf.Task[DiscoveryData, EpisodeState, DiscoveryTaskConfig]):
    @property
    def key(self) -> str:
        d = self.data
        return episode_key(d.suite, d.task_id, d.seed, d.options)

    @classmethod
    def toolsets(cls, config: DiscoveryTaskConfig) -> list[vf.Toolset]:
        return [EpisodeToolset(config.tools)]

    @vf.intercept
    def identify_call(self, request: vf.Request, trace: vf.Trace) -> vf.Request | None:
        """Runs once per proposed call before the harness sees the model's turn: notes
        the call (its turn and bounded id) for the tool server (charging is per call),
        or refuses a call no tool could take (unreadable arguments, unknown tool) with a
        short error that costs nothing and counts as one of the episode's tool errors.
        A call is known by its turn and id, so an id the model reuses in a later turn
        goes through the same checks."""
        last = request.messages[-1] if request.messages else None
        if not isinstance(last, vf.ToolMessage):
            return None
        found = _issuing_call(request.messages[:-1], last.tool_call_id)
        if found is None:
            return None
        turn, call = found
        call_id = bounded_id(call.id)
        state = trace.state
        if any(c.turn == turn and c.id == call_id for c in [*state.calls, *state.refused]):
            return None  # the same call again (the harness's next request)
        reason = None
        try:
            arguments = loads(call.arguments or "{}", what="the argument text")
        except UnsafeInput as exc:
            reason = str(exc)
        else:
            if not isinstance(arguments, dict):
                reason = f"the arguments must be a JSON object, not {type(arguments).__name__}"
            elif state.tools and call.name not in state.tools:
                reason = f"there is no such tool; tools: {', '.join(state.tools)}"
        if reason is None:
            state.calls.append(ProposedCall(turn=turn, id=call_id, name=call.name,
                                            arguments=canonical(arguments)))
            return None
        state.refused.append(Refusal(turn=turn, id=call_id, name=clip(call.name, 80),
                                     reason=reason))
        refused = last.model_copy(update={"content": _refusal_text(call.name, reason)})
        return request.model_copy(update={"messages": [*request.messages[:-1], refused]})

    @vf.intercept
    def unreadable_turn(self, response: vf.Response) -> vf.Response | None:
        """A model turn whose call arguments nest deeper than verifiers can hash (its
        graph decodes every call's arguments, without a bound) crashed the rollout: no
        record, no reward. Before verifiers stores the turn, it becomes a text reply
        that says so, so the rollout ends without an answer (a failed record).
        Shallower bad arguments are refused call by call (`identify_call`) and the
        episode goes on."""
        calls = response.message.tool_calls or []
        if not any(_nesting(call.arguments or "") > MAX_CARRIED_DEPTH for call in calls):
            return None
        return response.model_copy(update={
            "message": vf.AssistantMessage(content=DROPPED_TURN), "finish_reason": "stop"})

    @vf.stop
    def episode_over(self, trace: vf.Trace) -> bool:
        """The episode has ended (an answer was submitted): no further model turn."""
        return trace.state.done

    @vf.stop
    def agent_limit(self, trace: vf.Trace) -> bool:
        """The suite's limits for model doors: turns (a turn is a model message and
        the tool results it asked for) and tokens; its time limit is `timeout.agent`."""
        d = self.data
        return ((d.max_turns is not None and trace.num_turns >= d.max_turns)
                or (d.max_tokens is not None and trace.num_total_tokens >= d.max_tokens))

    @vf.reward
    async def episode_score(self, trace: vf.Trace) -> float:
        """The episode's score. (Not named `score`: that would shadow `Task.score`.)"""
        record = episode_record(trace)
        return float(record["score"]) if record else 0.0

    @vf.metric
    async def episode_usage(self, trace: vf.Trace) -> dict[str, float]:
        """Whether the episode passed, and what it spent."""
        record = episode_record(trace) or {"passed": False, "usage": {}}
        usage = record["usage"]
        return {"passed": float(bool(record["passed"])),
                **{k: float(usage.get(k, 0)) for k in USAGE_METRICS}}


def _nesting(text: str) -> int:
    """How deep JSON-like text nests arrays and objects (brackets in strings aside)."""
    if text.count("[") + text.count("{") <= MAX_CARRIED_DEPTH:
        return 0  # cannot be deeper: the common case, without a scan
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _issuing_call(messages: list[Any], call_id: str) -> tuple[int, Any] | None:
    """The latest proposed call with `call_id` before a tool result, and its turn (the
    number of assistant messages up to the one that proposed it)."""
    turns = sum(isinstance(m, vf.AssistantMessage) for m in messages)
    for message in reversed(messages):
        if isinstance(message, vf.AssistantMessage):
            for call in message.tool_calls or []:
                if call.id == call_id:
                    return turns, call
            turns -= 1
    return None


def episode_record(trace: vf.Trace) -> dict[str, Any] | None:
    """The episode's record, copied into `trace.info["record"]`; None (and the reason in
    `trace.info["record_error"]`) when the tool server left none."""
    if "record" not in trace.info:
        text = trace.state.record_json
        trace.info["record"] = None if text is None else loads(text, what="the record")
        if text is None:
            trace.info["record_error"] = ("the episode's tool server left no record (it "
                                          "did not start, or was killed)")
    return trace.info["record"]


class DiscoveryTasksetConfig(vf.TasksetConfig):
    suite: str = ""
    """A registered suite (`discoverygym list`)."""
    options: dict[str, str] = Field(default_factory=dict)
    """The suite's run options, as `discoverygym run` takes them (`protocol`, `tasks`,
    `worlds`, `level`, ...)."""
    split: Literal["train", "eval"] = "eval"
    seeds: str | None = None
    """eval: the runner's `--seeds` ("0-4": five episodes per case; default "0"), played
    in the held-out range."""
    task: DiscoveryTaskConfig = DiscoveryTaskConfig()


def agent_limits(spec: EpisodeSpec) -> AgentLimits:
    """The suite's limits for this episode: narrowed by tier where the suite has them
    (the rule of the Inspect door)."""
    suite = get_suite(spec.suite)
    if not suite.tier_limits:
        return suite.agent_limits
    tags = next((t.tags for t in suite.tasks() if t.id == spec.task_id), {})
    tier = tags.get("tier") or spec.options.get("tier")
    return suite.tier_limits.get(str(tier), suite.agent_limits)


def task_data(spec: EpisodeSpec) -> DiscoveryData:
    """The TaskData of an episode: its spec, its prompt and its limits (the episode is
    built here for the prompt and released again; the tool server builds its own)."""
    episode = spec.build()
    prompt = episode.prompt
    episode.record()  # frees what the episode holds on the host (temporary folders)
    limits = agent_limits(spec)
    return DiscoveryData(suite=spec.suite, task_id=spec.task_id, seed=spec.seed,
                         options=dict(spec.options), prompt=prompt,
                         system_prompt=get_suite(spec.suite).agent_note or None,
                         max_turns=max(1, limits.messages // 2), max_tokens=limits.tokens,
                         timeout=vf.TaskTimeout(agent=float(limits.time_s)),
                         id=episode_key(spec.suite, spec.task_id, spec.seed, spec.options),
                         key_id=spec.key.id if spec.key is not None else None,
                         name=f"{spec.suite}/{spec.task_id}")


class DiscoveryTaskset(vf.Taskset[DiscoveryTask, DiscoveryTasksetConfig]):
    def __init__(self, config: DiscoveryTasksetConfig) -> None:
        super().__init__(config)
        self.INFINITE = config.split == "train"
        self.specs = lambda: split_specs(config.suite, config.split, config.options,
                                         config.seeds)
        self.specs()  # a bad suite, option or split fails here, not mid-iteration

    def load(self) -> Iterator[DiscoveryTask]:
        for spec in self.specs():
            yield DiscoveryTask(task_data(spec), self.config.task)


class DiscoveryHarness(NullHarness):
    """The default harness: verifiers' plain chat loop, whose only tools are the
    episode's (a shell harness would run the model's commands on the rollout's machine,
    where the truth is cached). Its cleanup, which verifiers runs after every rollout,
    errored ones included, settles an errored rollout (`settle_errored`)."""

    async def cleanup(self, trace: vf.Trace, runtime: Any) -> None:
        await super().cleanup(trace, runtime)
        settle_errored(trace)


def _error_cause(trace: vf.Trace) -> str:
    """The last error in one line: its type and, of a traceback, the final line."""
    last = trace.last_error
    if last is None:
        return "an unknown error"
    lines = [line.strip() for line in (last.message or "").splitlines() if line.strip()]
    text = lines[0] if len(lines) <= 1 else f"{lines[0][:120]} ... {lines[-1]}"
    return clip(f"{last.type}: {text}", 400)


def settle_errored(trace: vf.Trace) -> None:
    """An errored rollout (the model server failed, the tool server did not start, the
    harness refused the model's turn) is one the episode failed: verifiers skips its
    scoring, and a mean over rewards would leave it out. It gets a failed record (the
    tool server's, or one written here) whose `error` says what happened, reward 0
    and its metrics, like any failed episode."""
    if trace.ok:
        return
    cause = _error_cause(trace)
    try:
        record = episode_record(trace)
    except UnsafeInput:  # a record too large or deep to read back: write one here
        record = None
    if record is None:
        data = trace.task.data
        if not isinstance(data, DiscoveryData):
            data = DiscoveryData.model_validate(data)
        spec = EpisodeSpec(data.suite, data.task_id, data.seed, dict(data.options))
        record = unbuilt_record(spec, None).to_dict()
    error = f"the rollout ended in an error: {cause}"
    if record.get("error") and record["error"] != NO_ANSWER:  # the tool server knew more
        error = f"{record['error']}; {error}"
    record = {**record, "passed": False, "score": 0.0, "error": error,
              "details": {**(record.get("details") or {}), "rollout_error": cause}}
    trace.info["record"] = record
    trace.info.pop("record_error", None)
    trace.record_reward("episode_score", 0.0)
    usage = record.get("usage") or {}
    trace.record_metrics({"passed": 0.0, **{k: float(usage.get(k, 0) or 0)
                                            for k in USAGE_METRICS}})
