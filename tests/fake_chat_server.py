"""A scripted OpenAI-compatible chat-completions server (standard library, 127.0.0.1)
for the verifiers door's rollouts: the model named in a request picks the script.

- `parity`: the door-parity policy (tests/doors/test_door_parity.py), replayed from the tool
  results in the conversation, so the same decisions as on every other door.
- `hostile`: unreadable arguments, an unknown tool, arguments that are not an object,
  a number no float holds, then a text reply without a tool call (no answer).
- `python`: one call of the sandboxed `python` tool, then an answer.
- `silent`: a text reply without a tool call.
- `status-500`, `status-429`: every request fails with that status.
- `same-id`: two tool calls with one id in one turn (verifiers refuses the turn).
- `reused-deep`: a probe with id `a`, then in the next turn id `a` again with 5,000-deep
  arguments, then text (no answer).
- `no-stream`: a whole JSON reply even when a stream was asked for.

Run as a script it serves until killed and prints its base URL."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOSTILE = [("probe", '{"x": '), ("teleport", '{"x": 1}'), ("probe", "[1, 2]"),
           ("probe", '{"x": 1' + "0" * 400 + "}")]

PYTHON = [("python", json.dumps({"code": "print(6 * 7)"})),
          ("submit", json.dumps({"answer": 50.0}))]


def parity_steps(replies: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The parity policy's next call after `replies`, or None once it has submitted."""
    from door_parity_policy import policy

    steps = policy()
    step = next(steps)
    for reply in replies:
        try:
            step = steps.send(reply)
        except StopIteration:
            return None
    return step


def next_calls(model: str, messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    replies = [m["content"] if isinstance(m["content"], str) else
               "".join(p.get("text", "") for p in m["content"])
               for m in messages if m["role"] == "tool"]
    if model == "parity":
        step = parity_steps(replies)
        return [] if step is None else [(step[0], json.dumps(step[1]))]
    if model == "hostile":
        return HOSTILE[len(replies):len(replies) + 1]
    if model == "python":
        return PYTHON[len(replies):len(replies) + 1]
    if model == "same-id":
        return [("probe", '{"x": 1}'), ("probe", '{"x": 2}')] if not replies else []
    if model == "reused-deep":
        return REUSED_DEEP[len(replies):len(replies) + 1]
    return []


REUSED_DEEP = [("probe", '{"x": 50}'), ("probe", '{"x": ' + "[" * 5000 + "]" * 5000 + "}")]
#: Models whose calls all carry one id.
ONE_ID = ("same-id", "reused-deep")


class FakeChat(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    server: FakeChat

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._json(200, {"object": "list", "data": []})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append(body)
        model = body.get("model", "")
        if model.startswith("status-"):
            code = int(model.split("-")[1])
            self._json(code, {"error": {"message": f"scripted {code}", "type": "server"}})
            return
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        calls = [{"id": "a" if model in ONE_ID else f"call_{turn}_{i}", "type": "function",
                  "function": {"name": name, "arguments": args}}
                 for i, (name, args) in enumerate(next_calls(model, body["messages"]))]
        message = {"role": "assistant", "content": None if calls else "I am done.",
                   **({"tool_calls": calls} if calls else {})}
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream") or model == "no-stream":
            self._json(200, {"id": f"chat-{turn}", "object": "chat.completion", "created": 0,
                             "model": model, "usage": usage, "choices": [
                                 {"index": 0, "message": message, "finish_reason": finish}]})
            return
        delta = {"role": "assistant", "content": message["content"]}
        if calls:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
        chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                  {"choices": [], "usage": usage}]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            chunk.update(id=f"chat-{turn}", object="chat.completion.chunk", created=0,
                         model=model)
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def _json(self, code: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    server = FakeChat()
    print(server.base_url, flush=True)
    sys.stdout.flush()
    server.serve_forever()
