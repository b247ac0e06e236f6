"""Serve one episode over MCP (stdio) with the official `mcp` SDK.

The episode's tools and the sandboxed `python` tool are the server's tools; the prompt
is the server's instructions. When the episode ends (or the client goes away) the
record is written to a file the client is not told about; the score is never sent.
The record keeps every call, python included, in its details as every door does
(`tool_log`, `sandbox`: doors/shared/call_log.py)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...core import Episode, ToolResult
from ...core.bounded import Bounds, UnsafeInput, clip, loads
from ..shared.call_log import CallLog
from ..shared.interpreter_tool import PYTHON_TOOL, InterpreterTool, prompt_for_door
from ..shared.mcp_content import mcp_content

#: A client line longer than this is refused without being parsed.
MAX_LINE_CHARS = 8_000_000
#: Bounds on a whole JSON-RPC message: the tool arguments sit three levels down and get
#: the tools' own, tighter bounds after this.
MESSAGE_BOUNDS = Bounds(max_depth=40, max_items=400_000, max_chars=MAX_LINE_CHARS)
#: The key under which a refused call reaches `on_call_tool`.
REFUSED = "__discoverygym_refused__"
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
_NAME = re.compile(r'"name"\s*:\s*"([A-Za-z0-9_.-]{1,100})"')


def _refusal(line: str, reason: str) -> str:
    """A `tools/call` with the same id and tool name carrying only the reason, so the
    server answers the client with a short error. The SDK drops a message it cannot
    parse without replying (pydantic stops at ~200 levels of nesting), which left the
    client waiting forever. The id is looked for before `"params"` (where clients put
    it), else at the end; with no id there is nobody to answer and the line is dropped."""
    head, _, _ = line.partition('"params"')
    found = _ID.search(head) or _ID.search(line[-300:])
    name = _NAME.search(line[len(head):len(head) + 4096])
    if found is None or '"tools/call"' not in line[:4096] + line[-300:]:
        return "\n"
    message = {"jsonrpc": "2.0", "id": json.loads(found.group(1)), "method": "tools/call",
               "params": {"name": name.group(1) if name else "unknown",
                          "arguments": {REFUSED: clip(reason, 300)}}}
    return json.dumps(message) + "\n"


class BoundedLines:
    """The client's side of stdio, read one bounded line at a time and checked with the
    bounded decoder before the SDK sees it (it is what `stdio_server` iterates)."""

    def __init__(self, binary: Any) -> None:
        self._text = io.TextIOWrapper(binary, encoding="utf-8", errors="replace")

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        import anyio

        line = await anyio.to_thread.run_sync(self._text.readline, MAX_LINE_CHARS + 1)
        if not line:
            raise StopAsyncIteration
        if len(line) > MAX_LINE_CHARS:
            head = line
            while line and not line.endswith("\n"):  # skip the rest of the long line
                line = await anyio.to_thread.run_sync(self._text.readline, 1 << 20)
            return _refusal(head, f"the message is longer than {MAX_LINE_CHARS} characters")
        try:
            loads(line, MESSAGE_BOUNDS, max_text=MAX_LINE_CHARS, what="the message")
        except UnsafeInput as exc:
            return _refusal(line, str(exc))
        return line


@contextmanager
def _claimed_stdin() -> Iterator[Any]:
    """The client's stdin on a private descriptor; fd 0 reads /dev/null meanwhile so that
    nothing the server starts can eat the client's messages."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield os.fdopen(private, "rb", buffering=0, closefd=False)
    finally:
        os.dup2(private, 0)
        os.close(private)


class EpisodeServer:
    """An `mcp` low-level Server bound to one episode, its interpreter and its record."""

    def __init__(self, server: Any, python: InterpreterTool | None, finish: Any) -> None:
        self.server = server
        self.python = python
        self.finish = finish

    def close(self, error: str | None) -> None:
        self.finish(error)
        if self.python is not None:
            self.python.close()


def build_server(episode: Episode, record_path: Path, *, interpreter: bool = True,
                 agent_name: str = "mcp-client") -> EpisodeServer:
    """Build the MCP server for one episode."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    calls = CallLog()
    python = InterpreterTool(episode, calls) if interpreter else None
    state = {"written": False}
    # The episode's tools run in worker threads, so calls a client sends at once run at
    # once. One at a time: a call racing `submit` is then either served before the
    # episode ends (and counted in its record) or refused after; before, two observes
    # racing a submit sent the client 20 rows that the record never counted.
    episode_lock = threading.Lock()

    def call_episode(name: str, args: Any) -> ToolResult:
        with episode_lock:
            return episode.call(name, args)

    def refuse_call(name: str, reason: str) -> ToolResult:
        with episode_lock:
            return episode.refuse(name, reason)

    def write_record(error: str | None = None) -> None:
        if state["written"]:
            return
        state["written"] = True
        with episode_lock:  # no call is half counted when the record is taken
            record = episode.record(agent=agent_name, error=error)
        if python is not None:
            python.record_calls(record.details)
        else:
            calls.write(record.details, None)
        record_path.parent.mkdir(parents=True, exist_ok=True)
        record_path.write_text(record.to_json() + "\n")

    def tool_list() -> list[types.Tool]:
        specs = list(episode.tool_specs())
        if python is not None:
            specs.append(PYTHON_TOOL)
        return [types.Tool(name=s.name, description=s.description,
                           input_schema=dict(s.parameters)) for s in specs]

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, params.arguments or {}
        if isinstance(args, dict) and set(args) == {REFUSED}:
            result = await anyio.to_thread.run_sync(refuse_call, name, str(args[REFUSED]))
            calls.note(name, None, result.text, True)
        elif python is not None and name == PYTHON_TOOL.name:
            code = args.get("code") if isinstance(args, dict) else None
            result = await anyio.to_thread.run_sync(python.run, code)
        else:
            started = time.perf_counter()
            result = await anyio.to_thread.run_sync(call_episode, name, args)
            if python is not None and not result.is_error:
                await anyio.to_thread.run_sync(python.refresh)
            calls.note(name, args, result.text, result.is_error,
                       duration_s=round(time.perf_counter() - started, 4))
        if episode.done:
            write_record()
            result = ToolResult(result.text + "\n\nThe episode has ended. You may disconnect.",
                                is_error=result.is_error, images=result.images)
        return types.CallToolResult(content=mcp_content(result), is_error=result.is_error)

    server = Server("discoverygym", version="1",
                    instructions=prompt_for_door(episode.prompt, interpreter=python is not None),
                    on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return EpisodeServer(server, python, write_record)


async def serve_stdio(episode: Episode, record_path: Path, *, interpreter: bool = True) -> None:
    """Run the server on this process's stdin/stdout until the client disconnects."""
    from mcp.server.stdio import stdio_server

    bound = build_server(episode, record_path, interpreter=interpreter)
    try:
        with _claimed_stdin() as client:
            async with stdio_server(stdin=BoundedLines(client)) as (read, write):
                await bound.server.run(read, write,
                                       bound.server.create_initialization_options())
    finally:
        bound.close(None if episode.answered else "client disconnected without an answer")
