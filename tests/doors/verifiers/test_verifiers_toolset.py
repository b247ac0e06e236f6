"""The verifiers door's tool server and Task, driven directly (no rollout, no model):
the episode's tools served with their own schemas, a call charged once per call id
however often the MCP client resends it, calls the Task refuses counted as free tool
errors, hostile arguments answered with short free errors, the record left in the
rollout state and never in a tool result."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("verifiers.v1")

import verifiers.v1 as vf  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from verifiers.v1.trace import AgentInfo, TraceTask  # noqa: E402

import toy_suite  # noqa: E402
from discoverygym.core import EpisodeSpec, UnknownName  # noqa: E402
from discoverygym.doors.verifiers.calls import canonical  # noqa: E402
from discoverygym.doors.verifiers.state import (  # noqa: E402
    EpisodeState,
    ProposedCall,
    Refusal,
)
from discoverygym.doors.verifiers.taskset import (  # noqa: E402
    DiscoveryTask,
    DiscoveryTaskConfig,
    DiscoveryTaskset,
    DiscoveryTasksetConfig,
    episode_record,
    settle_errored,
    task_data,
)
from discoverygym.doors.verifiers.toolset import (  # noqa: E402
    EpisodeToolset,
    EpisodeToolsetConfig,
)

toy_suite.install()
SPEC = EpisodeSpec("toy", "guess", 3, {"budget": 10})


def _toolset(spec: EpisodeSpec = SPEC) -> EpisodeToolset:
    toolset = EpisodeToolset(EpisodeToolsetConfig(interpreter=False))
    asyncio.run(toolset.setup_task(task_data(spec)))
    return toolset


def _call(toolset: EpisodeToolset, state: EpisodeState, name: str, args) -> str:
    return asyncio.run(toolset.answer(name, args, state)).text


def _record(state: EpisodeState) -> dict:
    assert state.done and state.record_json is not None
    return json.loads(state.record_json)


def test_the_toolset_serves_the_episode_tools_with_their_schemas():
    toolset = _toolset()
    mcp = MCPServer("test")
    toolset.register(mcp)
    tools = {t.name: t for t in asyncio.run(mcp.list_tools())}
    assert set(tools) == {"probe", "submit"}
    assert tools["probe"].input_schema["properties"] == {"x": {"type": "number"}}
    result = asyncio.run(mcp.call_tool("probe", {"x": 50.0}))
    assert not result.is_error and result.content[0].text.startswith("above:")


def test_bisection_through_the_toolset_passes_and_the_record_reaches_the_state_only():
    toolset, state = _toolset(), EpisodeState()
    lo, hi, texts = 0.0, 100.0, []
    for _ in range(9):
        mid = (lo + hi) / 2
        texts.append(_call(toolset, state, "probe", {"x": mid}))
        lo, hi = (mid, hi) if "True" in texts[-1] else (lo, mid)
    assert not state.done and state.record_json is None
    texts.append(_call(toolset, state, "submit", {"answer": (lo + hi) / 2}))
    record = _record(state)
    assert record["passed"] and record["agent"] == "verifiers" and record["seed"] == 3
    assert record["usage"]["observations"] == 9 and record["usage"]["tool_calls"] == 10
    truth = repr(record["truth"])
    assert "ended" in texts[-1] and not any(truth in t or "abs_error" in t for t in texts)


def test_a_resent_call_is_charged_once_and_identical_calls_each_once():
    """The chat harness's MCP client resends a failed call up to 6 times; the Task's
    hook has noted each proposed call's id in the state."""
    toolset = _toolset()
    state = EpisodeState(calls=[
        ProposedCall(id="c1", name="probe", arguments=canonical({"x": 50.0})),
        ProposedCall(id="c2", name="probe", arguments=canonical({"x": 25.0})),
        ProposedCall(id="c3", name="probe", arguments=canonical({"x": 10.0})),
        ProposedCall(id="c4", name="probe", arguments=canonical({"x": 10.0}))])
    first = _call(toolset, state, "probe", {"x": 50.0})
    assert [_call(toolset, state, "probe", {"x": 50.0}) for _ in range(5)] == [first] * 5
    assert toolset.episode.usage.observations == 1
    _call(toolset, state, "probe", {"x": 25.0})
    assert toolset.episode.usage.observations == 2
    _call(toolset, state, "probe", {"x": 10.0})  # c3
    _call(toolset, state, "probe", {"x": 10.0})  # c4: a second call, not a resend
    _call(toolset, state, "probe", {"x": 10.0})  # c4 resent
    assert toolset.episode.usage.observations == 4
    assert set(toolset.ledger.answers) == {"0:c1", "0:c2", "0:c3", "0:c4"}
    assert toolset.episode.usage.tool_calls == 4  # resends are not calls either


def test_calls_the_task_refused_count_as_free_tool_errors_in_the_record():
    toolset = _toolset()
    state = EpisodeState(refused=[Refusal(id="r1", name="teleport", reason="no such tool")])
    _call(toolset, state, "probe", {"x": 50.0})
    _call(toolset, state, "probe", {"x": 50.0 + 1})  # the refusal is counted once
    _call(toolset, state, "submit", {"answer": 1.0})
    usage = _record(state)["usage"]
    assert (usage["tool_calls"], usage["tool_errors"], usage["observations"]) == (4, 1, 2)


def test_hostile_arguments_are_short_free_errors_and_the_episode_goes_on():
    toolset, state = _toolset(), EpisodeState()
    deep: object = 0
    for _ in range(200):
        deep = [deep]
    for value in (10**400, deep, "y" * 3_000_000, [0.5] * 300_000, float("nan")):
        result = asyncio.run(toolset.answer("probe", {"x": value}, state))
        assert result.is_error and len(result.text) < 1000
    assert asyncio.run(toolset.answer("probe", "not an object", state)).is_error
    assert toolset.episode.usage.observations == 0 and toolset.episode.usage.tool_errors == 6
    _call(toolset, state, "submit", {"answer": 50.0})
    assert _record(state)["answer"] == 50.0


def _trace(task: DiscoveryTask, state: EpisodeState) -> vf.Trace:
    return vf.Trace(task=TraceTask(type="DiscoveryTask", data=task.data, key=task.key,
                                   hash=task.hash),
                    state=state, agent=AgentInfo(config=vf.AgentConfig()))


def test_the_task_notes_proposed_calls_and_refuses_what_no_tool_takes():
    task = DiscoveryTask(task_data(SPEC), DiscoveryTaskConfig())
    trace = _trace(task, EpisodeState(tools=["probe", "submit"]))
    calls = [vf.ToolCall(id="a", name="probe", arguments='{"x": 5}'),
             vf.ToolCall(id="b", name="teleport", arguments="{}"),
             vf.ToolCall(id="c", name="probe", arguments='{"x": '),
             vf.ToolCall(id="d", name="probe", arguments="[1]"),
             vf.ToolCall(id="e", name="probe", arguments="[" * 5000 + "]" * 5000)]
    turn = [vf.UserMessage(content="prompt"), vf.AssistantMessage(tool_calls=calls)]
    verdicts = {}
    for call in calls:
        probe = vf.ToolMessage(tool_call_id=call.id, name=call.name, content="")
        out = task.identify_call(vf.Request(messages=[*turn, probe]), trace)
        verdicts[call.id] = None if out is None else out.messages[-1].content
        # the same call seen again (the harness's next request) changes nothing
        assert task.identify_call(vf.Request(messages=[*turn, probe]), trace) is None
    assert verdicts["a"] is None
    assert all("Nothing was charged" in verdicts[k] and len(verdicts[k]) < 700 for k in "bcde")
    assert [c.id for c in trace.state.calls] == ["a"]
    assert trace.state.calls[0].arguments == canonical({"x": 5})
    assert [r.id for r in trace.state.refused] == ["b", "c", "d", "e"]


def test_an_id_reused_in_a_later_turn_goes_through_the_same_checks():
    """The attack: turn 1 calls probe with id "a"; turn 2 reuses "a" with 5,000-deep
    arguments. Checked only by id, the second call skipped the Task's checks and
    reached the tool server (whose ledger took it for a resend of the first: a free
    answer). Known by (turn, id), it is refused, and a valid reuse is a new call."""
    task = DiscoveryTask(task_data(SPEC), DiscoveryTaskConfig())
    toolset, state = _toolset(), EpisodeState(tools=["probe", "submit"])
    trace = _trace(task, state)

    def propose(history: list, call: vf.ToolCall) -> list:
        turn = [*history, vf.AssistantMessage(tool_calls=[call])]
        probe = vf.ToolMessage(tool_call_id=call.id, name=call.name, content="")
        out = task.identify_call(vf.Request(messages=[*turn, probe]), trace)
        return turn, (None if out is None else out.messages[-1].content)

    history = [vf.UserMessage(content="prompt")]
    history, verdict = propose(history, vf.ToolCall(id="a", name="probe", arguments='{"x": 5}'))
    assert verdict is None
    _call(toolset, state, "probe", {"x": 5})
    history.append(vf.ToolMessage(tool_call_id="a", name="probe", content="above"))
    deep = vf.ToolCall(id="a", name="probe", arguments="[" * 5000 + "]" * 5000)
    history, verdict = propose(history, deep)
    assert "Nothing was charged" in verdict and "nested" in verdict
    history.append(vf.ToolMessage(tool_call_id="a", name="probe", content=verdict))
    again = vf.ToolCall(id="a", name="probe", arguments='{"x": 5}')
    history, verdict = propose(history, again)
    assert verdict is None
    assert [(c.turn, c.id) for c in state.calls] == [(1, "a"), (3, "a")]
    assert [(r.turn, r.id) for r in state.refused] == [(2, "a")]
    _call(toolset, state, "probe", {"x": 5})  # turn 3: a call of its own, charged
    assert toolset.episode.usage.observations == 2


def test_a_turn_nested_deeper_than_verifiers_can_carry_ends_the_rollout():
    """5,000-deep arguments crashed the rollout in verifiers' own graph (it decodes every
    call's arguments, unbounded); the Task turns such a turn into text first."""
    task = DiscoveryTask(task_data(SPEC), DiscoveryTaskConfig())

    def turn(*arguments: str) -> vf.Response:
        calls = [vf.ToolCall(id=f"c{i}", name="probe", arguments=a)
                 for i, a in enumerate(arguments)]
        return vf.Response(id="r", created=0, model="m", finish_reason="tool_calls",
                           message=vf.AssistantMessage(tool_calls=calls))
    dropped = task.unreadable_turn(turn('{"x": ' + "[" * 5000 + "]" * 5000 + "}"))
    assert dropped.message.tool_calls in (None, []) and "deeper" in dropped.message.content
    assert dropped.finish_reason == "stop" and dropped.id == "r"
    assert task.unreadable_turn(turn('{"x": 1}', '{"x": ' + '{"a": ' * 300 + "1" + "}" * 301))
    for fine in ('{"x": ' + "[" * 50 + "]" * 50 + "}",
                 json.dumps({"x": "[" * 5000 + '\\"' + "{" * 5000})):
        assert task.unreadable_turn(turn(fine)) is None
    assert task.unreadable_turn(vf.Response(id="r", created=0, model="m", finish_reason="stop",
                                            message=vf.AssistantMessage(content="hi"))) is None


def test_call_ids_are_bounded_in_the_rollout_state():
    """A 1 MB call id made a 1 MB rollout state, which travels whole with every call."""
    task = DiscoveryTask(task_data(SPEC), DiscoveryTaskConfig())
    trace = _trace(task, EpisodeState(tools=["probe", "submit"]))
    huge = "i" * 1_000_000
    for name, arguments in (("probe", '{"x": 5}'), ("teleport", "{}")):
        call = vf.ToolCall(id=huge + name, name=name, arguments=arguments)
        turn = [vf.UserMessage(content="prompt"), vf.AssistantMessage(tool_calls=[call])]
        probe = vf.ToolMessage(tool_call_id=call.id, name=name, content="")
        task.identify_call(vf.Request(messages=[*turn, probe]), trace)
    assert len(trace.state.calls) == len(trace.state.refused) == 1
    assert len(trace.state.model_dump_json()) < 2000


def test_reward_metrics_and_stop_read_the_record_from_the_state():
    task = DiscoveryTask(task_data(SPEC), DiscoveryTaskConfig())
    toolset, state = _toolset(), EpisodeState()
    trace = _trace(task, state)
    assert task.episode_over(trace) is False
    _call(toolset, state, "probe", {"x": 50.0})
    _call(toolset, state, "submit", {"answer": 50.0})
    assert task.episode_over(trace) is True
    asyncio.run(task.score(trace))
    record = trace.info["record"]
    assert trace.rewards["episode_score"].score == record["score"]
    assert trace.metrics["observations"] == 1 and trace.metrics["passed"] == float(record["passed"])


def test_a_rollout_that_left_no_record_scores_zero_with_the_reason():
    task = DiscoveryTask(task_data(SPEC), DiscoveryTaskConfig())
    trace = _trace(task, EpisodeState())
    assert asyncio.run(task.episode_score(trace)) == 0.0
    assert trace.info["record"] is None and "no record" in trace.info["record_error"]
    assert episode_record(trace) is None


def test_an_errored_rollout_is_settled_as_a_failed_record_with_reward_0():
    """verifiers skips scoring an errored rollout: no reward, no record, left out of a
    mean. The harness's cleanup settles it: a failed record saying why, reward 0."""
    task = DiscoveryTask(task_data(SPEC), DiscoveryTaskConfig())
    trace = _trace(task, EpisodeState())
    trace.record_error(RuntimeError("Traceback (most recent call last):\n  File x\n"
                                    "openai.InternalServerError: Error code: 502"))
    settle_errored(trace)
    record = trace.info["record"]
    assert trace.rewards["episode_score"].score == 0.0 and trace.metrics["passed"] == 0.0
    assert (record["suite"], record["seed"], record["passed"]) == ("toy", 3, False)
    assert record["error"].startswith("the rollout ended in an error: RuntimeError: ")
    assert record["error"].endswith("Error code: 502")
    passed = _trace(task, EpisodeState(done=True, record_json=json.dumps(
        {"passed": True, "score": 1.0, "error": None, "usage": {"observations": 3}})))
    passed.ok = True  # as verifiers sets it before the harness's cleanup
    settle_errored(passed)
    assert not passed.rewards and "record" not in passed.info  # left to scoring
    passed.record_error(RuntimeError("later"))
    settle_errored(passed)
    assert not passed.info["record"]["passed"] and passed.metrics["observations"] == 3.0


def test_the_taskset_is_the_split_and_its_tasks_carry_the_prompt_not_the_truth():
    tasks = list(DiscoveryTaskset(DiscoveryTasksetConfig(suite="toy", seeds="0-1")))
    assert [(t.data.task_id, t.data.seed) for t in tasks] == [("guess", 1_000_000),
                                                               ("guess", 1_000_001)]
    episode = EpisodeSpec("toy", "guess", 1_000_000, {"budget": 10}).build()
    assert tasks[0].data.prompt == episode.prompt
    wire = tasks[0].data.model_dump_json()
    assert repr(episode._hidden) not in wire
    assert len({t.key for t in tasks}) == 2
    train = DiscoveryTaskset(DiscoveryTasksetConfig(suite="toy", split="train"))
    assert not train.bounded and [t.data.seed for t in train.take(3)] == [0, 1, 2]
    with pytest.raises(UnknownName, match="no option --nope"):
        DiscoveryTaskset(DiscoveryTasksetConfig(suite="toy", options={"nope": "1"}))


def test_the_suite_limits_for_model_doors_reach_the_task_and_stop_the_rollout():
    data = task_data(SPEC)
    assert (data.max_turns, data.max_tokens, data.timeout.agent) == (30, 1_000_000, 300)
    task = DiscoveryTask(data, DiscoveryTaskConfig())
    trace = _trace(task, EpisodeState())
    assert task.agent_limit(trace) is False
    short = DiscoveryTask(data.model_copy(update={"max_turns": 0}), DiscoveryTaskConfig())
    assert short.agent_limit(trace) is True


def test_a_gravity_episode_with_the_python_tool_through_the_toolset():
    """Observe, compute in the sandboxed interpreter (refreshed after each observation),
    submit: the period of world A, as an MCP client does on the MCP door."""
    spec = EpisodeSpec("gravity", "period", 0, {"world": "A", "protocol": "budget-obs-100"})
    toolset = EpisodeToolset(EpisodeToolsetConfig())
    asyncio.run(toolset.setup_task(task_data(spec)))
    state = EpisodeState()
    try:
        assert [s.name for s in toolset.tool_specs()][-1] == "python"
        end = float(_call(toolset, state, "python", {"code": "print(window[1])"}).split()[-1])
        for k in range(10):  # at most 10 times per observe call
            times = [end * (10 * k + i) / 99 for i in range(10)]
            result = asyncio.run(toolset.answer("observe", {"times": times}, state))
            assert not result.is_error, result.text
        code = """
import numpy as np
from scipy.signal import lombscargle
t = observations["time"].to_numpy() * units["time_to_s"]
r = np.hypot(observations["star2_x"] - observations["star1_x"],
             observations["star2_y"] - observations["star1_y"]).to_numpy()
periods = np.linspace(t[-1] / 30, t[-1] / 2, 20000)
print(periods[np.argmax(lombscargle(t, r - r.mean(), 2 * np.pi / periods))])
"""
        period_s = float(_call(toolset, state, "python", {"code": code}).split()[-1])
        _call(toolset, state, "submit", {"answer": period_s})
    finally:
        asyncio.run(toolset._finish())
    record = _record(state)
    assert record["passed"], (record["answer"], record["truth"])
    # python calls are not the episode's tool calls, as on the MCP door
    assert record["usage"]["observations"] == 100 and record["usage"]["tool_calls"] == 11


def test_a_local_run_uses_the_subprocess_runtime_and_pushes_nothing():
    from discoverygym.doors.verifiers.launch import eval_command

    argv = eval_command("gravity", model="m", base_url="http://127.0.0.1:9/v1",
                        api_key_var="K", options={"protocol": "full-obs", "world-seed": "5"},
                        split="train", limit=3)
    assert "--no-push" in argv
    assert argv[argv.index("--env.agent.runtime.type") + 1] == "subprocess"
    assert argv[argv.index("--env.taskset.options.protocol") + 1] == "full-obs"
    assert argv[argv.index("--env.taskset.options.world_seed") + 1] == "5"
    assert argv[argv.index("-n") + 1] == "3"


def test_the_python_call_is_in_the_record_as_on_every_door():
    """The rollout's python calls are kept in details.tool_log and details.sandbox, the
    shape tests/doors/test_door_python_calls.py checks on the other doors (before: the
    verifiers door ran python and kept nothing of it in the record)."""
    toolset = EpisodeToolset(EpisodeToolsetConfig(interpreter=True))
    asyncio.run(toolset.setup_task(task_data(SPEC)))
    state = EpisodeState()
    try:
        assert _call(toolset, state, "python", {"code": "print(40 + 2)"}).strip() == "42"
        _call(toolset, state, "probe", {"x": 50.0})
        _call(toolset, state, "submit", {"answer": 50.0})
    finally:
        asyncio.run(asyncio.to_thread(toolset.python.close))
    details = _record(state)["details"]
    assert [e["tool"] for e in details["tool_log"]] == ["python", "probe", "submit"]
    python = details["tool_log"][0]
    assert python["arguments"] == "print(40 + 2)" and python["outcome"] == "ok"
    assert details["sandbox"]["python_calls"] == 1 and details["sandbox"]["isolation"]
    assert _record(state)["usage"]["tool_calls"] == 2  # python is not an episode call
