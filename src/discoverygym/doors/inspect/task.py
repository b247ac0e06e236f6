"""A suite's episodes as an Inspect task: one Sample per episode, the episode's tools
and a sandboxed `python` tool for a react agent, and a scorer that writes the
EpisodeRecord into the score's metadata."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import anyio
from inspect_ai import Task
from inspect_ai.agent import AgentPrompt, AgentState, as_solver, react
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageTool, ChatMessageUser, Model, model_roles
from inspect_ai.model._model import sample_model_usage
from inspect_ai.scorer import Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import (
    ContentImage,
    ContentText,
    Tool,
    ToolCallError,
    ToolDef,
    ToolError,
    ToolParams,
)
from inspect_ai.tool import ToolResult as InspectToolResult

from ...core import EpisodeSpec, Suite, ToolSpec, episode_key, get_suite, plan_episodes
from ...core.bounded import clip
from ...core.keys import Key
from ...core.seeds import parse_seeds
from ...sandbox import SandboxConfig
from .limits import (
    AgentLimits,
    episode_limits,
    sandbox_config,
    suite_limits,
    system_prompt,
)
from .prices import cost_usd
from .session import PYTHON_TOOL, PYTHON_TOOL_DESCRIPTION, PYTHON_TOOL_PARAMETERS, EpisodeSession

AGENT_NAME = "inspect-react"
CONTINUE_PROMPT = ("You have not submitted an answer yet. Continue working with the tools, "
                   "and call `submit` with your final answer when you are ready.")

# Replies without a tool call, each answered with CONTINUE_PROMPT, before the episode
# is ended as failed (saves tokens when a model has given up).
MAX_IDLE_TURNS = 3
TOOL_ERROR_CHARS = 600  # what the model is shown of an Inspect refusal

# Live sessions by sample uuid: the solver opens one, the scorer closes it out.
SESSIONS: dict[str, EpisodeSession] = {}
# Keys of keyed samples by key id, held in this process only: a sample's metadata (which
# Inspect writes into its log) names the key's id, never the key.
KEYS: dict[str, Key] = {}

# The Inspect model role of the optional grader (`--grader-model`, or Inspect's own
# `--model-role grader=...`); suites that offer a `grader_prompt` are graded by it.
GRADER_ROLE = "grader"


def sample_id(spec: EpisodeSpec) -> str:
    """A readable, unique sample id for an episode."""
    key = episode_key(spec.suite, spec.task_id, spec.seed, spec.options)
    return f"{spec.task_id}-s{spec.seed}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def _tool_params(schema: dict[str, Any]) -> ToolParams:
    # Inspect models a subset of JSON Schema; keywords it does not know are dropped
    # from what the model sees, but the episode validates against the full schema.
    # Inspect insists on a description per parameter; the tool's text describes them.
    schema = {k: v for k, v in schema.items() if k != "$schema"}
    properties = {}
    for name, prop in dict(schema.get("properties", {})).items():
        prop = dict(prop)
        prop.setdefault("description", name.replace("_", " "))
        properties[name] = prop
    return ToolParams.model_validate({"type": "object", **schema, "properties": properties})


def environment_tool(session: EpisodeSession, spec: ToolSpec) -> Tool:
    """An Inspect tool for one of the episode's tools (generated from its JSON spec)."""

    async def execute(**kwargs: Any) -> InspectToolResult:
        # Suites may simulate on a call: keep Inspect's event loop free.
        result = await anyio.to_thread.run_sync(session.call_tool, spec.name, kwargs)
        if result.is_error:
            raise ToolError(result.text)
        return tool_output(result.text, result.images)

    return ToolDef(execute, name=spec.name, description=spec.description,
                   parameters=_tool_params(dict(spec.parameters))).as_tool()


def tool_output(text: str, images: list[bytes]) -> InspectToolResult:
    """A tool result for the model: the text, and each PNG (e.g. mad's visual
    observations) as an image the model sees, not as text."""
    if not images:
        return text
    return [ContentText(text=text), *(
        ContentImage(image="data:image/png;base64," + base64.b64encode(png).decode("ascii"))
        for png in images)]


def python_tool(session: EpisodeSession) -> Tool:
    """The sandboxed interpreter as an Inspect tool."""

    async def execute(code: str) -> str:
        text, _ = await anyio.to_thread.run_sync(session.run_python, code)
        return text

    return ToolDef(execute, name=PYTHON_TOOL, description=PYTHON_TOOL_DESCRIPTION,
                   parameters=_tool_params(PYTHON_TOOL_PARAMETERS), max_output=0).as_tool()


def _episode_tags(suite: Suite, task_id: str) -> dict[str, Any]:
    for info in suite.tasks():
        if info.id == task_id:
            return dict(info.tags)
    return {}


@solver
def episode_agent(sandbox: SandboxConfig | None = None) -> Solver:
    """Build the sample's episode and interpreter, then run a react agent on it."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        key_id = state.metadata.get("key_id")
        if key_id is not None and key_id not in KEYS:
            raise ValueError(f"sample drawn with key {key_id}, which this process does not hold")
        spec = EpisodeSpec(**state.metadata["episode"], key=KEYS.get(key_id))
        config = sandbox or sandbox_config(spec.suite)
        session = await anyio.to_thread.run_sync(EpisodeSession, spec, config)
        SESSIONS[state.uuid] = session
        suite = get_suite(spec.suite)
        if suite.tier_limits:
            tags = await anyio.to_thread.run_sync(_episode_tags, suite, spec.task_id)
            limits = episode_limits(spec.suite, spec.options, tags)
            state.token_limit = limits.tokens
            state.message_limit = limits.messages
        state.messages = [ChatMessageUser(content=session.episode.prompt)]
        tools = [environment_tool(session, s) for s in session.episode.tool_specs()]
        tools.append(python_tool(session))

        idle_turns = 0

        async def on_continue(agent_state: AgentState) -> bool | str:
            nonlocal idle_turns
            for name, reason in _take_refusals(agent_state.messages):
                if name != PYTHON_TOOL:  # python calls are not the episode's tool calls
                    session.refuse(name, reason)
            if session.done:
                return False
            if agent_state.output.message.tool_calls:
                idle_turns = 0
                return True
            idle_turns += 1
            if idle_turns > MAX_IDLE_TURNS:  # the model has stopped working
                session.stopped_reason = (f"the model answered {idle_turns} times in a row "
                                          "without calling a tool")
                return False
            return CONTINUE_PROMPT

        agent = react(
            prompt=AgentPrompt(instructions=system_prompt(spec.suite), handoff_prompt=None,
                               assistant_prompt=None, submit_prompt=None),
            tools=tools, submit=False, on_continue=on_continue)
        try:
            return await as_solver(agent)(state, generate)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(session.close)

    return solve


def _take_refusals(messages: list[Any]) -> list[tuple[str, str]]:
    """Inspect's own refusals in the turn just taken (unknown tool, unparsable or
    schema-invalid arguments): (tool, reason) for each, so the episode counts them as
    tool errors as every other door does. They quote the whole argument text back
    (3 MB of it for a 3 MB string), so they are cut before the model reads them."""
    refused = []
    for message in reversed(messages):
        if not isinstance(message, ChatMessageTool):
            break
        error = message.error
        if error is None or error.type != "parsing":
            continue
        if len(error.message) > TOOL_ERROR_CHARS:
            message.error = ToolCallError(error.type, clip(error.message, TOOL_ERROR_CHARS))
        refused.append((str(message.function), message.error.message))
    return refused[::-1]


def _limit_reason() -> str | None:
    """Which sample limit ended the episode, if one did."""
    try:
        from inspect_ai.util._limit import sample_limits

        limits = sample_limits()
    except Exception:
        return None
    for name, limit in (("message", limits.message), ("token", limits.token),
                        ("time", limits.time), ("working-time", limits.working)):
        value, usage = getattr(limit, "limit", None), getattr(limit, "usage", None)
        if value is not None and usage is not None and usage >= value:
            return f"{name} limit of {value:g} reached"
    return None


def _inspect_tool_errors(state: TaskState) -> list[dict[str, str]]:
    """Tool calls Inspect refused before they reached the episode (unknown tool,
    unparsable or schema-invalid arguments)."""
    out = []
    for message in state.messages:
        if isinstance(message, ChatMessageTool) and message.error is not None \
                and message.error.type == "parsing":
            out.append({"tool": str(message.function), "error": message.error.message[:400]})
    return out


def _grader_model() -> Model | None:
    try:
        bound = model_roles().get(GRADER_ROLE)
    except LookupError:  # no roles outside a running task
        return None
    if isinstance(bound, list):
        return bound[0] if bound else None
    return bound


async def _holistic_grade(session: EpisodeSession) -> dict[str, Any]:
    """Ask the grader model (if one is bound) to grade the finished episode. Returns
    what goes into the record's details besides the episode's own grade fields; a
    grader failure is its own outcome there, never a change of the verdict."""
    grader = _grader_model()
    if grader is None:
        return {}
    prompt = await anyio.to_thread.run_sync(session.episode.grader_prompt)
    if prompt is None:
        return {}
    try:
        output = await grader.generate(prompt)
    except Exception as exc:  # the grader's provider failed: say so, score unchanged
        return {"grader_error": f"{type(exc).__name__}: {exc}"[:400], "grader": str(grader)}
    session.episode.record_grade(output.completion, str(grader))
    usage = output.usage
    return {"grader_usage": {"input_tokens": usage.input_tokens if usage else 0,
                             "output_tokens": usage.output_tokens if usage else 0}}


@scorer(metrics=[accuracy(), stderr()])
def episode_record(agent_name: str = AGENT_NAME,
                   prices: dict[str, tuple[float, float]] | None = None) -> Any:
    """Score = the episode's pass/fail; metadata["record"] = the EpisodeRecord."""

    async def score(state: TaskState, target: Target) -> Score:
        session = SESSIONS.pop(state.uuid, None)
        if session is None:
            return Score(value=0.0, explanation="the episode never started")
        model = str(state.model)
        error = None
        if not session.episode.answered:
            error = "no answer submitted"
            reason = _limit_reason() or session.stopped_reason or "the agent stopped"
            error += f" ({reason})"
        # The agent's usage is totalled before the grader runs (the usage dict is live),
        # so the grader's tokens are never counted as the agent's.
        usage = sample_model_usage().values()
        input_tokens = sum(u.input_tokens for u in usage)
        output_tokens = sum(u.output_tokens for u in usage)
        grading = await _holistic_grade(session)
        record = session.episode.record(agent=agent_name, model=model, error=error)
        record.usage.input_tokens = input_tokens
        record.usage.output_tokens = output_tokens
        usd = cost_usd(model, record.usage.input_tokens, record.usage.output_tokens,
                       None if prices is None else prices)
        record.usage.usd = usd or 0.0
        if usd is None:
            record.details["price_unknown"] = True
        session.record_calls(record.details)
        record.details.update(grading)
        refused = _inspect_tool_errors(state)
        if refused:
            record.details["refused_tool_calls"] = refused
        data = json.loads(record.to_json())
        return Score(value=1.0 if record.passed else 0.0,
                     answer=json.dumps(data["answer"])[:500],
                     explanation=record.error or f"{record.metric} = {record.value}",
                     metadata={"record": data})

    return score


def suite_task(suite: str | Suite, specs: list[EpisodeSpec] | None = None, *,
               sandbox: SandboxConfig | None = None, limits: AgentLimits | None = None,
               prices: dict[str, tuple[float, float]] | None = None,
               **options: Any) -> Task:
    """An Inspect Task with one Sample per episode of `suite`.

    `specs` (from `suite.episodes`) or the suite's options as strings (e.g. protocol=
    "budget-obs-100", tasks="period,eccentricity"), with `seeds` as `--seeds` takes
    them (`-T seeds=0-4`; default the suite's), select the episodes."""
    s = get_suite(suite) if isinstance(suite, str) else suite
    if specs is None:
        raw = {k: _option_text(v) for k, v in options.items() if k not in ("model", "seeds")}
        seeds = options.get("seeds")
        specs = plan_episodes(s, s.parse_options(raw),
                              None if seeds is None else parse_seeds(_option_text(seeds)))
    lim = limits or suite_limits(s.name)
    samples = [
        Sample(id=sample_id(spec),
               input=f"{spec.suite} episode {spec.task_id} (seed {spec.seed}); the full "
                     "instructions are loaded when the episode starts.",
               target="", metadata={"episode": spec.to_dict(),
                                    **({"key_id": spec.key.id} if spec.key else {})})
        for spec in specs
    ]
    KEYS.update({spec.key.id: spec.key for spec in specs if spec.key is not None})
    return Task(dataset=MemoryDataset(samples, name=s.name), solver=episode_agent(sandbox),
                scorer=episode_record(prices=prices), message_limit=lim.messages,
                token_limit=lim.tokens, time_limit=lim.time_s, name=s.name)


def _option_text(value: Any) -> str:
    """Inspect's -T values arrive parsed (numbers, lists); suites parse strings."""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
