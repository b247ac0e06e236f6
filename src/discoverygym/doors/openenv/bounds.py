"""The OpenEnv door's transport guard: every WebSocket frame and HTTP request body is
decoded with the project's bounds (core/bounded.py) before OpenEnv's own, unbounded
`json.loads` and pydantic see it. A 5,000-deep message raised RecursionError there,
which ended the session; an argument of 10**400 digits reached the episode."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ...core.bounded import Bounds, UnsafeInput, clip, loads

#: A WebSocket text frame or HTTP body longer than this is refused without parsing
#: (the MCP door's limit). Frames above `WS_MAX_BYTES` are cut off by the server itself,
#: which closes that connection (WebSocket code 1009).
MAX_MESSAGE_CHARS = 8_000_000
WS_MAX_BYTES = 4 * MAX_MESSAGE_CHARS
#: Bounds on a whole message; the tool arguments sit three levels down and get the
#: tools' own, tighter bounds when the episode checks them.
MESSAGE_BOUNDS = Bounds(max_depth=40, max_items=400_000, max_chars=MAX_MESSAGE_CHARS)
#: The metadata key under which a refused step reaches the environment.
REFUSED = "discoverygym_refused"
_TOOL = re.compile(r'"tool"\s*:\s*"([A-Za-z0-9_.-]{1,100})"')
_STEP = re.compile(r'"type"\s*:\s*"step"')

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _step_problem(message: dict[str, Any], action_cls: type[BaseModel]) -> str | None:
    """Why a decoded WebSocket message cannot be a step of `action_cls`, or None."""
    if message.get("type") != "step":
        return None
    try:
        action_cls.model_validate(message.get("data"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first.get("loc", ()))) or "the action"
        return (f"{clip(where, 80)}: {clip(first.get('msg', 'invalid'), 200)}. A step's "
                "data is {\"tool\": name, \"args\": {...}}")
    return None


def _refused_step(text: str, decoded: Any, reason: str) -> str:
    """A step carrying only the tool's name and the reason it was refused."""
    name = None
    if isinstance(decoded, dict) and isinstance(decoded.get("data"), dict):
        tool = decoded["data"].get("tool")
        name = tool if isinstance(tool, str) and len(tool) <= 100 else None
    if name is None:
        found = _TOOL.search(text[:4096]) or _TOOL.search(text[-4096:])
        name = found.group(1) if found else "unknown"
    return json.dumps({"type": "step", "data": {
        "tool": name, "args": {}, "metadata": {REFUSED: clip(reason, 300)}}})


class BoundedMessages:
    """ASGI middleware: WebSocket frames and HTTP request bodies are decoded with the
    project's bounds, and a step's data checked against `action_cls`, before OpenEnv
    sees them. A refused step goes on to the environment as a step whose metadata holds
    the reason under `REFUSED` (the environment counts it as a refused call); any other
    refused message is answered with an OpenEnv error message. The session goes on."""

    def __init__(self, app: Callable[..., Awaitable[None]], *,
                 action_cls: type[BaseModel]) -> None:
        self.app = app
        self.action_cls = action_cls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self.app(scope, self._websocket(receive, send), send)
        elif scope["type"] == "http" and scope.get("method") in ("POST", "PUT", "PATCH"):
            await self._http(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _websocket(self, receive: Receive, send: Send) -> Receive:
        async def bounded_receive() -> Message:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                text = message.get("text")
                if text is None:  # a binary frame: read as text, as OpenEnv expects text
                    text = (message.get("bytes") or b"").decode("utf-8", errors="replace")
                decoded, reason = None, None
                try:
                    decoded = loads(text, MESSAGE_BOUNDS, max_text=MAX_MESSAGE_CHARS,
                                    what="the message")
                    if not isinstance(decoded, dict):
                        reason = "a message is a JSON object with a \"type\""
                    else:
                        reason = _step_problem(decoded, self.action_cls)
                except UnsafeInput as exc:
                    reason = str(exc)
                if reason is None:
                    return {"type": "websocket.receive", "text": text}
                is_step = (decoded.get("type") == "step" if isinstance(decoded, dict)
                           else bool(_STEP.search(text[:4096]) or _STEP.search(text[-300:])))
                if is_step:
                    return {"type": "websocket.receive",
                            "text": _refused_step(text, decoded, reason)}
                await send({"type": "websocket.send", "text": json.dumps(
                    {"type": "error", "data": {"message": clip(reason, 400),
                                               "code": "VALIDATION_ERROR"}})})
        return bounded_receive

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_MESSAGE_CHARS:
                await _http_error(send, 413, f"the request body is longer than "
                                             f"{MAX_MESSAGE_CHARS} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body.strip():
            try:
                loads(body, MESSAGE_BOUNDS, max_text=MAX_MESSAGE_CHARS,
                      what="the request body")
            except UnsafeInput as exc:
                await _http_error(send, 400, str(exc))
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, replay, send)


async def _http_error(send: Send, status: int, reason: str) -> None:
    body = json.dumps({"detail": clip(reason, 400)}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


