"""The OpenEnv door (`discoverygym serve openenv SUITE`): a real server on an ephemeral
port, played by OpenEnv's own client over its WebSocket, checked by `openenv validate
--url`, fed hostile messages, and held to the door parity record.

openenv needs mcp<2 and the MCP door needs mcp 2, so this file runs in an environment
of its own (`make test-openenv`, .venv-openenv); elsewhere it skips with that reason."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from testpaths import TESTS

pytest.importorskip("openenv", reason="openenv is not installed here (it needs mcp<2, "
                    "so it has its own environment: make test-openenv)")

from openenv import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import toy_suite  # noqa: E402
from discoverygym.core import ToolResult  # noqa: E402
from discoverygym.core.keys import new_key  # noqa: E402
from discoverygym.core.record import read_records  # noqa: E402
from discoverygym.doors.openenv.server import (  # noqa: E402
    DiscoveryAction,
    DiscoveryEnvironment,
    EpisodeDraws,
    RecordSink,
)
from door_parity_policy import SEED, _direct, _summary, drive, report  # noqa: E402

toy_suite.install()


def _server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env["DISCOVERYGYM_PLUGINS"] = "toy_suite"
    return env


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("openenv") / "records.jsonl"


def _serve(*args: str) -> Iterator[str]:
    """The toy plugin served by the real command on a free port; yields its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "discoverygym.cli", "serve", "openenv", "toy", "--port", "0",
         *args], env=_server_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(proc.stdout.readline()))
    reader.start()
    reader.join(120)
    try:
        assert found and "http://" in found[0], proc.stderr.read() if proc.poll() else found
        base = found[0].split(": ", 1)[1].split()[0]
        yield base
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture(scope="module")
def url(records) -> Iterator[str]:
    """A training server (the client chooses seeds), whose clients may set the budget."""
    yield from _serve("--max-sessions", "4", "--records", str(records), "--client-options",
                      "budget", "--client-seeds", "--budget", "10")


@pytest.fixture(scope="module")
def eval_records(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("openenv-eval") / "records.jsonl"


@pytest.fixture(scope="module")
def eval_url(eval_records) -> Iterator[str]:
    """An evaluation server as it starts by default (a budget of 10 is the operator's),
    with sessions no socket holds closed after 1 s (the reaper looks every 5 s)."""
    yield from _serve("--max-sessions", "2", "--records", str(eval_records),
                      "--no-send-record", "--session-timeout", "1", "--budget", "10")


def _client(url: str) -> Any:
    return GenericEnvClient(base_url=url).sync()


def _bisect(env: Any, seed: int) -> tuple[Any, list[float]]:
    """Play the toy task by bisection; returns the last step and the budgets seen."""
    first = env.reset(seed=seed)
    budgets = [first.observation["budget_left"]]
    lo, hi = 0.0, 100.0
    for _ in range(9):
        mid = (lo + hi) / 2
        step = env.step({"tool": "probe", "args": {"x": mid}})
        budgets.append(step.observation["budget_left"])
        assert not step.done and step.reward == 0.0
        if "True" in step.observation["text"]:
            lo = mid
        else:
            hi = mid
    return env.step({"tool": "submit", "args": {"answer": (lo + hi) / 2}}), budgets


def test_a_client_plays_an_episode_to_done_and_is_paid_the_score(url):
    with _client(url) as env:
        first = env.reset(seed=3)
        assert first.observation["text"].startswith("Find the hidden number")
        # the prompt says this door has no interpreter or workspace (#27)
        assert "no python interpreter" in first.observation["text"]
        assert [t["function"]["name"] for t in first.observation["tools"]] == ["probe",
                                                                               "submit"]
        assert first.observation["record"] is None and first.reward is None
        last, budgets = _bisect(env, seed=3)
        state = env.state()
    assert budgets == [10.0 - i for i in range(10)]
    record = last.observation["record"]
    assert last.done and record["passed"] and last.reward == record["score"] == 1.0
    assert record["seed"] == 3 and record["agent"] == "openenv"
    assert record["details"]["episode_draw"] == {"mode": "training",
                                                 "seed": "chosen by the client"}
    assert record["usage"]["observations"] == 9 and record["usage"]["tool_calls"] == 10
    assert state["done"] and state["step_count"] == 10 and state["seed"] == 3
    assert "truth" not in state and state["options"] == {"budget": 10}


def test_the_parity_policy_leaves_the_same_record_as_every_other_door(url):
    with _client(url) as env:
        env.reset(seed=SEED)
        out: dict[str, Any] = {}

        def call(name: str, args: dict[str, Any]) -> str:
            step = env.step({"tool": name, "args": args})
            out.update(step.observation["record"] or {})
            return step.observation["text"]
        drive(call)
    direct = _summary(_direct())
    assert out["seed"] == SEED and _summary(out) == direct
    assert direct["tool_errors"] == 2 and direct["passed"]
    report("openenv", out)


def test_concurrent_sessions_each_play_their_own_episode(url):
    """Four clients at once (the server's --max-sessions): each session has its own
    episode, budget and record."""
    def play(seed: int) -> dict[str, Any]:
        with _client(url) as env:
            last, budgets = _bisect(env, seed)
        assert budgets == [10.0 - i for i in range(10)]
        return last.observation["record"]
    seeds = [11, 12, 13, 14]
    with ThreadPoolExecutor(len(seeds)) as pool:
        records = list(pool.map(play, seeds))
    assert [r["seed"] for r in records] == seeds
    assert all(r["passed"] and r["usage"]["observations"] == 9 for r in records)
    truths = {r["truth"] for r in records}
    assert len(truths) == len(seeds)  # four different hidden numbers, not one shared


def _ws(url: str) -> Any:
    return connect(url.replace("http://", "ws://") + "/ws", max_size=None, open_timeout=30)


def _say(ws: Any, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps({"type": kind, "data": data}))
    return json.loads(ws.recv(timeout=60))


def _wait_for(records: Path, count: int) -> list[dict[str, Any]]:
    for _ in range(200):
        found = read_records(records) if records.exists() else []
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{count} records expected in {records}")


def test_an_evaluation_server_chooses_every_episode_and_never_replays_one(eval_url,
                                                                          eval_records):
    """The attack: play an episode with garbage, learn its truth (from the reward alone
    under --no-send-record), reset the same seed and answer it. An evaluation server
    refuses a chosen seed, draws unseen seeds the client cannot read (not in the state)
    and scores every drawn episode once, played or not."""
    with _ws(eval_url) as ws:
        assert "evaluation server" in _say(ws, "reset", {"seed": 3})["data"]["message"]
        first = _say(ws, "reset", {})
        assert first["type"] == "observation"
        assert _say(ws, "state", {})["data"].get("seed") is None  # the client cannot rebuild it
        garbage = _say(ws, "step", {"tool": "submit", "args": {"answer": -1}})
        assert garbage["data"]["done"] and garbage["data"]["reward"] == 0.0
        assert garbage["data"]["observation"]["record"] is None  # --no-send-record
        _say(ws, "reset", {})  # drawn, abandoned unplayed: still a (failed) record
        _say(ws, "reset", {})
    records = _wait_for(eval_records, 2)
    seeds = [r["seed"] for r in records]
    assert len(set(seeds)) == len(seeds) and 3 not in seeds
    assert all(r["details"]["episode_draw"]["mode"] == "evaluation" for r in records)
    assert records[0]["error"] is None and records[1]["error"] == (
        "the client reset before the episode ended")
    assert all(r["usage"]["tool_calls"] == 0 for r in records[1:])


def test_an_evaluation_server_keeps_budgets_to_the_operator(eval_url):
    """The default `--client-options` is none: a client asking for a budget of 100000
    on a --budget 10 server is refused, and its episode has the operator's budget."""
    with _ws(eval_url) as ws:
        refused = _say(ws, "reset", {"options": {"budget": 100000}})
        assert refused["type"] == "error" and "may set: none" in refused["data"]["message"]
        assert _say(ws, "reset", {})["data"]["observation"]["budget_left"] == 10


def _session_create(url: str) -> dict[str, Any]:
    import httpx

    return httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "params": {},
                                          "method": "openenv/session/create"},
                      timeout=30).json()


def test_a_thinking_socket_keeps_its_episode(eval_url):
    """A socket idle past --session-timeout (1 s here; the reaper looks every 5 s) keeps
    its episode: reaping it ended the episode as a failure, and a reaped session whose
    socket stayed open played on beside new ones (more live environments than the
    capacity)."""
    with _ws(eval_url) as ws:
        _say(ws, "reset", {})
        time.sleep(7)  # the socket thinks past the timeout and a reaper pass
        step = _say(ws, "step", {"tool": "probe", "args": {"x": 50}})
        assert not step["data"]["done"] and step["data"]["observation"]["budget_left"] == 9
        with _ws(eval_url) as second, _ws(eval_url) as third:  # --max-sessions 2
            assert _say(second, "reset", {})["type"] == "observation"
            assert json.loads(third.recv(timeout=60))["data"]["code"] == "CAPACITY_REACHED"


def test_an_evaluation_server_offers_no_socketless_session(eval_url):
    """Issue #38: six `POST /mcp openenv/session/create` took all 4 slots with no socket
    and no credentials, and a WebSocket client got CAPACITY_REACHED. An evaluation
    server now refuses each such request, and WebSocket clients get every slot."""
    for _ in range(6):
        refused = _session_create(eval_url)
        assert "error" in refused and "evaluation server" in refused["error"]["message"]
    with _ws(eval_url) as one, _ws(eval_url) as two:  # --max-sessions 2: both slots
        for ws in (one, two):
            assert _say(ws, "reset", {})["type"] == "observation"


@pytest.fixture(scope="module")
def short_train_url() -> Iterator[str]:
    """A training server (socketless sessions offered) with a 1 s session timeout."""
    yield from _serve("--max-sessions", "2", "--client-seeds", "--session-timeout", "1",
                      "--budget", "10")


def _mcp(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    import httpx

    return httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                          "params": params}, timeout=30).json()


def test_failing_requests_do_not_keep_a_socketless_session_alive(short_train_url):
    """Issue #38: pinging a squatted session every 2 s with a failing tools/list kept it
    alive 24 s past a 6 s --session-timeout. Here the squatter pings every 0.5 s and
    the session still expires on schedule (the reaper's first pass after the timeout,
    at most 5 s): no HTTP request plays an episode of this server, so none counts as
    activity. Both slots are then free for WebSocket clients."""
    squatted = [_session_create(short_train_url)["result"]["session_id"] for _ in range(2)]
    pings = []
    for _ in range(60):  # 30 s of pings at most; the reaper passes every 5 s
        answers = [_mcp(short_train_url, "tools/list", {"session_id": sid})
                   for sid in squatted]
        pings.append([a["error"]["message"] for a in answers])
        assert all("error" in a for a in answers)  # tools/list fails: it plays nothing
        if all("Unknown session_id" in m for m in pings[-1]):
            break
        time.sleep(0.5)
    assert all("Unknown session_id" in m for m in pings[-1]), pings[-3:]
    with _ws(short_train_url) as one, _ws(short_train_url) as two:
        for ws in (one, two):
            assert _say(ws, "reset", {})["type"] == "observation"


def test_openenv_validate_passes_against_the_running_server(url):
    done = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", "--url", url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Verdict: PASS" in done.stdout


HOSTILE_STEPS = [
    ('{"type": "step", "data": {"tool": "launch", "args": {}}}', "Unknown tool"),
    ('{"type": "step", "data": {"tool": "probe", "args": {"x": "abc"}}}', "Invalid input"),
    ('{"type": "step", "data": {"tool": "probe", "args": "x=3"}}', "args"),
    ('{"type": "step", "data": {"tool": "probe", "args": {}, "rm": 1}}', "rm"),
    ('{"type": "step", "data": {"tool": "probe", "args": {"x": ' + "[" * 5000 + "]" * 5000
     + "}}}", "nested"),
    ('{"type": "step", "data": {"tool": "probe", "args": {"x": 1' + "0" * 400 + "}}}",
     "digits"),
    ('{"type": "step", "data": {"tool": "probe", "args": {"x": Infinity}}}', "finite"),
    ('{"type": "step", "data": {"tool": "probe", "args": {"x": "' + "y" * 3_000_000 + '"}}}',
     "characters"),
    ('{"type": "step", "data": {"tool": "probe", "args": {"x": "' + "y" * 9_000_000 + '"}}}',
     "at most 8000000"),
]


def test_hostile_steps_are_short_free_errors_and_the_episode_goes_on(url):
    """Every refused step is an observation with is_error, a short text, no charge, and
    one more tool error in the record; the session and its episode go on."""
    ws_url = url.replace("http://", "ws://") + "/ws"
    with connect(ws_url, max_size=None, open_timeout=30) as ws:
        def send(text: str) -> dict[str, Any]:
            ws.send(text)
            return json.loads(ws.recv(timeout=60))

        assert send('{"type": "reset", "data": {"seed": 1}}')["type"] == "observation"
        for raw, fragment in HOSTILE_STEPS:
            reply = send(raw)
            obs = reply["data"]["observation"]
            assert reply["type"] == "observation" and obs["is_error"], raw[:100]
            assert fragment in obs["text"] and len(obs["text"]) < 1000, obs["text"][:300]
            assert obs["budget_left"] == 10 and not reply["data"]["done"]
        for raw in ["not json", "[1, 2]", '{"type": "reset", "data": {"seed": -1}}',
                    '{"type": "reset", "data": {"seed": 1, "cheat": true}}',
                    '{"type": "reset", "data": {"options": {"hidden": 3}}}',  # --client-options
                    '{"type": "reset", "data": {"task_id": 5}}',
                    '{"type": "reset", "data": {"options": {"budget": 1' + "0" * 500 + "}}}",
                    '{"type": "reset", "data": ' + "[" * 5000 + "]" * 5000 + "}"]:
            reply = send(raw)
            assert reply["type"] == "error", (raw[:80], reply)
            assert len(reply["data"]["message"]) < 1000, reply["data"]["message"][:300]
        ws.send(b'{"type": "step", "data": {"tool": "probe", "args": {"x": 50}}}')
        obs = json.loads(ws.recv(timeout=60))["data"]["observation"]
        assert not obs["is_error"] and obs["budget_left"] == 9  # the episode went on
        final = send('{"type": "step", "data": {"tool": "submit", "args": {"answer": 50}}}')
    record = final["data"]["observation"]["record"]
    assert final["data"]["done"] and record["seed"] == 1
    usage = record["usage"]
    assert usage["tool_errors"] == len(HOSTILE_STEPS) and usage["observations"] == 1


def test_plain_http_gets_a_fresh_environment_per_request_and_bounded_bodies(url):
    import httpx

    reset = httpx.post(f"{url}/reset", json={"seed": 2}, timeout=30).json()
    assert reset["observation"]["text"].startswith("Find the hidden number")
    step = httpx.post(f"{url}/step", json={"action": {"tool": "probe", "args": {"x": 1}}},
                      timeout=30).json()
    assert step["observation"]["is_error"] and "WebSocket" in step["observation"]["text"]
    deep = httpx.post(f"{url}/step", content='{"action": ' + "[" * 5000 + "]" * 5000 + "}",
                      headers={"content-type": "application/json"}, timeout=30)
    assert deep.status_code == 400 and "nested" in deep.json()["detail"]
    refused = httpx.post(f"{url}/reset", json={"task_id": 5}, timeout=30)
    assert refused.status_code == 400 and "task_id" in refused.json()["detail"]
    huge = httpx.post(f"{url}/reset", content=b" " * 9_000_000, timeout=30)
    assert huge.status_code == 413
    assert httpx.get(f"{url}/health", timeout=30).json()["status"] == "healthy"


def test_the_server_keeps_every_played_episode_in_its_records_file(url, records):
    """Finished and abandoned episodes alike (an abandoned one fails, with the reason)."""
    with _client(url) as env:
        last, _ = _bisect(env, seed=21)
    with _client(url) as env:
        env.reset(seed=22)
        env.step({"tool": "probe", "args": {"x": 50}})
    for _ in range(100):  # the server closes the second session after the client left
        seen = {r["seed"]: r for r in read_records(records)}
        if 22 in seen:
            break
        time.sleep(0.1)
    assert seen[21] == last.observation["record"]
    assert not seen[22]["passed"] and seen[22]["usage"]["observations"] == 1
    assert seen[22]["error"] == "the session closed before the episode ended"


def test_records_can_stay_off_the_wire(tmp_path):
    """--no-send-record: the last step still pays the score; the record (truth
    included) goes to the server's file only. A reset that played nothing (every plain
    HTTP /reset) leaves no record."""
    path = tmp_path / "records.jsonl"
    env = DiscoveryEnvironment("toy", options={"budget": 10}, records=RecordSink(path),
                               send_record=False)
    env.reset(seed=4)
    env.reset(seed=5)
    last = env.step(DiscoveryAction(tool="submit", args={"answer": 50.0}))
    [record] = read_records(path)
    assert last.done and last.record is None and last.reward == record["score"]
    assert record["seed"] == 5 and record["answer"] == 50.0 and "truth" in record
    env.close()
    assert len(read_records(path)) == 1


def test_evaluation_draws_are_keyed_unique_and_shared_by_every_session(tmp_path):
    """Seeds come from the server's key (its id in every record), never repeat across
    the sessions of a server, and two servers with one key draw different seeds (a
    restart does not replay the episodes a client has seen)."""
    key = new_key()
    draws = EpisodeDraws(key=key)
    sink = RecordSink(tmp_path / "records.jsonl")
    sessions = [DiscoveryEnvironment("toy", options={"budget": 10}, records=sink,
                                     draws=draws) for _ in range(3)]
    for env in sessions * 20:
        env.reset()
    for env in sessions:
        env.close()
    records = read_records(tmp_path / "records.jsonl")
    assert len(records) == 60 and len({r["seed"] for r in records}) == 60
    assert {r["details"]["episode_draw"]["key"] for r in records} == {key.id}
    restarted = EpisodeDraws(key=key)
    assert not {restarted.seed(None, "guess", {}) for _ in range(60)} & {
        r["seed"] for r in records}
    with pytest.raises(ValueError, match="evaluation server"):
        draws.seed(7, "guess", {})
    training = EpisodeDraws(client_seeds=True)
    assert training.seed(7, "guess", {}) == 7 and training.seed(None, "guess", {}) == 0
    assert training.key_id is None


def test_a_client_sets_only_the_options_the_server_allows():
    env = DiscoveryEnvironment("gravity", "period", {"world": "PM1",
                                                     "protocol": "budget-obs-100"},
                               client_options=frozenset({"world"}))
    env.reset(options={"world": "A"})
    with pytest.raises(ValueError, match="may set: world"):
        env.reset(options={"protocol": "full-obs"})
    assert env.state.options == {"world": "A", "protocol": "budget-obs-100"}
    env.close()


def test_pictures_travel_as_base64_png(monkeypatch):
    """A tool result with pictures (mad's visual variant) keeps them, as PNG in base64."""
    png = b"\x89PNG\r\n\x1a\n a picture"
    monkeypatch.setattr(toy_suite.GuessEpisode, "_probe",
                        lambda self, args: ToolResult("see the picture", images=[png]))
    env = DiscoveryEnvironment("toy", options={"budget": 10})
    env.reset(seed=0)
    obs = env.step(DiscoveryAction(tool="probe", args={"x": 1.0}))
    assert obs.text == "see the picture" and [base64.b64decode(i) for i in obs.images] == [png]


def test_a_suite_whose_extra_is_missing_refuses_resets_clearly(monkeypatch):
    def missing(self, task_id, **kwargs):
        raise ImportError("No module named 'jax'")
    monkeypatch.setattr(toy_suite.ToySuite, "episode", missing)
    env = DiscoveryEnvironment("toy")
    with pytest.raises(ValueError, match="cannot build toy episodes: No module named 'jax'"):
        env.reset()


def test_the_step_limit_ends_the_episode_as_a_failure():
    env = DiscoveryEnvironment("toy", options={"budget": 10}, max_steps=2)
    env.reset(seed=0)
    assert not env.step(DiscoveryAction(tool="probe", args={"x": 5})).done
    last = env.step(DiscoveryAction(tool="probe", args={"x": 6}))
    assert last.done and last.reward == 0.0
    assert last.record["error"] == "step limit reached" and not last.record["passed"]
    after = env.step(DiscoveryAction(tool="submit", args={"answer": 1}))
    assert after.is_error and after.done and after.record is None


def test_python_is_not_offered_so_no_python_call_reaches_the_record():
    """This door offers the episode's tools only (the prompt says so). A `python` step
    is an unknown tool: a free error, counted in tool_errors, never run. Offering python
    here means recording its calls through doors/shared/call_log.py as the other doors
    do (tests/doors/test_door_python_calls.py)."""
    env = DiscoveryEnvironment("toy", options={"budget": 10})
    first = env.reset(seed=0)
    assert "python" not in [t["function"]["name"] for t in first.tools]
    step = env.step(DiscoveryAction(tool="python", args={"code": "print(40 + 2)"}))
    assert step.is_error and "42" not in step.text
    last = env.step(DiscoveryAction(tool="submit", args={"answer": 50.0}))
    assert last.record["usage"]["tool_errors"] == 1
    assert "sandbox" not in last.record["details"]


def test_a_real_suite_through_the_registry_with_server_options_as_defaults():
    """gravity, named only at run time: the server's options are the defaults, a
    client's options override them, and a budgeted observe is charged."""
    env = DiscoveryEnvironment("gravity", "period", {"world": "PM1",
                                                     "protocol": "budget-obs-100"},
                               client_options=frozenset({"world"}))
    first = env.reset(seed=0)
    assert first.budget_left == 100 and "observe" in [t["function"]["name"]
                                                      for t in first.tools]
    obs = env.step(DiscoveryAction(tool="observe", args={"times": [0.0]}))
    assert not obs.is_error and obs.budget_left == 99
    with pytest.raises(ValueError, match="nope"):
        env.reset(task_id="nope")
    with pytest.raises(ValueError, match="world"):
        env.reset(options={"world": "nowhere"})
    assert env.step(DiscoveryAction(tool="observe", args={"times": [1.0]})).budget_left == 98
    other = env.reset(seed=0, options={"world": "A"})
    assert env.state.options["world"] == "A" and other.budget_left == 100
    last = env.step(DiscoveryAction(tool="submit", args={"answer": 1e7}))
    wire = json.loads(last.model_dump_json())  # what the WebSocket sends
    assert wire["done"] and wire["record"]["options"]["world"] == "A"
    assert wire["reward"] == wire["record"]["score"]


def test_a_session_over_the_limit_is_refused_and_the_others_go_on(url):
    ws_url = url.replace("http://", "ws://") + "/ws"

    def open_session(stack: ExitStack) -> Any:
        # an earlier test's sessions may still be closing on the server: wait for a slot
        for _ in range(100):
            ws = stack.enter_context(connect(ws_url, open_timeout=30))
            try:
                ws.send('{"type": "reset", "data": {}}')
                if json.loads(ws.recv(timeout=60))["type"] == "observation":
                    return ws
            except ConnectionClosed:  # refused: the server answered and closed at once
                pass
            time.sleep(0.1)
        raise AssertionError("no session slot became free")

    with ExitStack() as stack:
        held = [open_session(stack) for _ in range(4)]  # the server's --max-sessions
        with connect(ws_url, open_timeout=30) as extra:  # refused before it says a word
            refused = json.loads(extra.recv(timeout=60))
        assert refused["data"]["code"] == "CAPACITY_REACHED"
        held[0].send('{"type": "step", "data": {"tool": "probe", "args": {"x": 1}}}')
        assert json.loads(held[0].recv(timeout=60))["data"]["observation"]["budget_left"] == 9


def _doc_blocks() -> tuple[str, str]:
    """The serve command and the client script of docs/doors.md's OpenEnv section."""
    text = (TESTS.parent / "docs" / "doors.md").read_text()
    section = text.split("## OpenEnv", 1)[1].split("\n## ", 1)[0]
    bash = section.split("```bash\n", 1)[1].split("```", 1)[0]
    python = section.split("```python\n", 1)[1].split("```", 1)[0]
    [serve] = [line for line in bash.splitlines() if " serve openenv " in line]
    return serve, python


def test_the_documented_example_runs_as_written():
    """docs/doors.md's serve command (on a free port) and its client script, verbatim."""
    serve, client = _doc_blocks()
    args = serve.split(" serve openenv ", 1)[1].replace("--port 8000", "--port 0").split()
    proc = subprocess.Popen([sys.executable, "-m", "discoverygym.cli", "serve", "openenv",
                             *args], env=_server_env(), stdout=subprocess.PIPE, text=True)
    try:
        base = proc.stdout.readline().split(": ", 1)[1].split()[0]
        done = subprocess.run([sys.executable, "-c",
                               client.replace("http://127.0.0.1:8000", base)],
                              capture_output=True, text=True, timeout=300)
    finally:
        proc.terminate()
        proc.wait(30)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert "['observe', 'submit']" in lines and lines[-1].startswith("True 0.0 False")
    assert any(line.endswith(" 97.0") for line in lines)


def test_the_capacity_family_holds_and_finds_both_holes_without_the_defence(monkeypatch):
    """The audit's `openenv-capacity` family (doors/openenv/attacks.py), declared beside
    the server: held now; with the server's own OpenEnv behaviour back (socketless
    sessions offered everywhere, every request counted as activity) both attacks are
    findings."""
    from openenv.core.env_server.http_server import HTTPEnvServer

    from discoverygym.audit import PLATFORM_ATTACK_MODULES
    from discoverygym.core import get_suite
    from discoverygym.core.audit_registry import AuditTarget
    from discoverygym.doors.openenv import attacks, server

    assert "discoverygym.doors.openenv.attacks" in PLATFORM_ATTACK_MODULES
    target = AuditTarget(get_suite("toy"))
    held = attacks.capacity_attacks(target)
    assert all(o.ok for o in held), held

    original = server._socket_held_server

    def openenv_as_it_was(*, socketless: bool) -> type:
        class AsItWas(original(socketless=True)):
            _update_session_activity = HTTPEnvServer._update_session_activity
        return AsItWas

    monkeypatch.setattr(server, "_socket_held_server", openenv_as_it_was)
    monkeypatch.setattr(attacks, "SQUAT_FOR_S", 12.0)
    found = attacks.capacity_attacks(target)
    assert not any(o.ok for o in found), found
