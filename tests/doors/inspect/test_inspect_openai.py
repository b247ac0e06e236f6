"""The real network path, offline: a small OpenAI-compatible chat-completions server
(standard library, 127.0.0.1) whose answers come from the scripted policies, driven
through Inspect's OpenAI-compatible provider (`openai-api/<service>/<model>`) by
`discoverygym run gravity --model ...`."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.doors.inspect.limits import system_prompt
from discoverygym.doors.inspect.policies import Context, Reply, get_policy, next_step
from discoverygym.run import read_records

SERVICE = "fakeai"
API_KEY = "sk-fake-local-test-key"
PROMPT_TOKENS_PER_MESSAGE = 11  # the server's own, deterministic token accounting
COMPLETION_TOKENS = 23


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def policy_view(body: dict[str, Any]) -> tuple[Context, list[list[Reply]]]:
    """The scripted policy's view of an OpenAI chat request."""
    messages = body["messages"]
    prompt = next((_text(m["content"]) for m in messages if m["role"] == "user"), "")
    results = {m["tool_call_id"]: Reply(_text(m["content"]), False)
               for m in messages if m["role"] == "tool"}
    history = [[results.get(c["id"], Reply("", True)) for c in m.get("tool_calls") or []]
               for m in messages if m["role"] == "assistant"]
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    return Context(prompt=prompt, tools=tools), history


class FakeOpenAI(ThreadingHTTPServer):
    """POST /v1/chat/completions answered by the policy named in the request's model."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []
        self.auth: set[str] = set()
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, *args: Any) -> None:  # keep the test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        ctx, history = policy_view(body)
        step = next_step(get_policy(body["model"]), ctx, history)
        turn = len(history)
        calls = [{"id": f"call_{turn}_{i}", "type": "function",
                  "function": {"name": c.name, "arguments": c.arguments
                               if isinstance(c.arguments, str) else json.dumps(c.arguments)}}
                 for i, c in enumerate(step.calls)]
        message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
        if calls:
            message["tool_calls"] = calls
        n_in = PROMPT_TOKENS_PER_MESSAGE * len(body["messages"])
        response = {
            "id": f"chatcmpl-{turn}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": n_in, "completion_tokens": COMPLETION_TOKENS,
                      "total_tokens": n_in + COMPLETION_TOKENS},
        }
        with self.server.lock:
            self.server.requests.append(body)
            self.server.responses.append(response)
            self.server.auth.add(self.headers.get("Authorization", ""))
        self._send(200, response)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def fake_server():
    server = FakeOpenAI()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def openai_run(fake_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("openai") / "run"
    prices = tmp_path_factory.mktemp("prices") / "prices.json"
    prices.write_text(json.dumps({f"openai-api/{SERVICE}/expert": [2.0, 8.0]}))
    mp = pytest.MonkeyPatch()
    mp.setenv(f"{SERVICE.upper()}_API_KEY", API_KEY)
    mp.setenv(f"{SERVICE.upper()}_BASE_URL", fake_server.base_url)
    mp.setenv("DISCOVERYGYM_PRICES", str(prices))
    try:
        result = CliRunner().invoke(app, [
            "run", "gravity", "--model", f"openai-api/{SERVICE}/expert",
            "--tasks", "period,eccentricity", "--worlds", "A,PM1",
            "--protocol", "budget-obs-100", "--max-connections", "4",
            "--out", str(out), "--quiet"])
    finally:
        mp.undo()
    assert result.exit_code == 0, result.output
    return out


def test_expert_passes_through_the_openai_endpoint(openai_run):
    records = read_records(Path(openai_run) / "records.jsonl")
    assert sorted((r["task_id"], r["options"]["world"]) for r in records) == [
        ("eccentricity", "A"), ("eccentricity", "PM1"), ("period", "A"), ("period", "PM1")]
    for r in records:
        assert r["passed"], (r["task_id"], r["answer"], r["error"])
        assert r["model"] == f"openai-api/{SERVICE}/expert"
        assert r["usage"]["observations"] > 0


def test_requests_carry_our_prompt_tools_and_key(openai_run, fake_server):
    assert fake_server.auth == {f"Bearer {API_KEY}"}
    first = fake_server.requests[0]
    system = [m for m in first["messages"] if m["role"] == "system"]
    assert len(system) == 1
    assert _text(system[0]["content"]).strip() == system_prompt("gravity").strip()
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert {"observe", "python", "submit"} <= set(tools)
    assert tools["observe"]["parameters"]["properties"]["times"]["type"] == "array"
    # Tool results travel back as tool messages; the policy read them to finish.
    assert any(m["role"] == "tool" for r in fake_server.requests for m in r["messages"])


def test_tokens_and_cost_come_from_the_server(openai_run, fake_server):
    records = read_records(Path(openai_run) / "records.jsonl")
    served_in = sum(r["usage"]["prompt_tokens"] for r in fake_server.responses)
    served_out = sum(r["usage"]["completion_tokens"] for r in fake_server.responses)
    assert sum(r["usage"]["input_tokens"] for r in records) == served_in
    assert sum(r["usage"]["output_tokens"] for r in records) == served_out
    for r in records:
        usage = r["usage"]
        expected = (usage["input_tokens"] * 2.0 + usage["output_tokens"] * 8.0) / 1e6
        assert usage["usd"] == pytest.approx(expected) and usage["usd"] > 0
        assert "price_unknown" not in r["details"]


def test_base_url_model_arg_epochs_limit_and_resume(fake_server, tmp_path, monkeypatch):
    """The endpoint given as `--model-arg base_url=...`; epochs, limit and resume on
    the toy suite (cheap episodes)."""
    import toy_suite
    from discoverygym.core import get_suite
    from discoverygym.doors.inspect.model_run import parse_model_args, run_model

    toy_suite.install()
    monkeypatch.setenv(f"{SERVICE.upper()}_API_KEY", API_KEY)
    monkeypatch.delenv(f"{SERVICE.upper()}_BASE_URL", raising=False)
    specs = get_suite("toy").episodes(range(2))
    model = f"openai-api/{SERVICE}/expert"
    args = parse_model_args([f"base_url={fake_server.base_url}"])
    first = run_model("toy", specs, model=model, out_dir=tmp_path, model_args=args,
                      limit=1, epochs=2)
    assert sorted(r["details"]["epoch"] for r in first.records) == [1, 2]
    assert {r["seed"] for r in first.records} == {specs[0].seed}
    assert all(r["passed"] and r["details"]["price_unknown"] for r in first.records)
    again = run_model("toy", specs, model=model, out_dir=tmp_path, model_args=args,
                      epochs=2, resume=True)
    assert again.n_new == 2 and len(again.records) == 4
    assert sorted((r["seed"], r["details"]["epoch"]) for r in again.records) == sorted(
        (s.seed, e) for s in specs for e in (1, 2))
    assert again.summary["n_episodes"] == 4 and again.summary["pass_rate"] == 1.0
