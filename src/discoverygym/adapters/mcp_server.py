"""Serve one episode over MCP (stdio) with the official `mcp` SDK.

The episode's tools and the sandboxed `python` tool are the server's tools; the prompt
is the server's instructions. When the episode ends (or the client goes away) the
record is written to a file the client is not told about; the score is never sent."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ..core import Episode, ToolResult
from .interpreter_tool import PYTHON_TOOL, InterpreterTool


def _content(result: ToolResult) -> list[Any]:
    import mcp.types as types

    blocks: list[Any] = [types.TextContent(type="text", text=result.text)]
    for png in result.images:
        blocks.append(types.ImageContent(type="image", mime_type="image/png",
                                         data=base64.b64encode(png).decode("ascii")))
    return blocks


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

    python = InterpreterTool(episode) if interpreter else None
    state = {"written": False}

    def write_record(error: str | None = None) -> None:
        if state["written"]:
            return
        state["written"] = True
        record = episode.record(agent=agent_name, error=error)
        if python is not None and python.isolation:
            record.details["sandbox_isolation"] = python.isolation
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
        if python is not None and name == PYTHON_TOOL.name:
            result = await anyio.to_thread.run_sync(python.run, args.get("code"))
        else:
            result = await anyio.to_thread.run_sync(episode.call, name, args)
            if python is not None and not result.is_error:
                await anyio.to_thread.run_sync(python.refresh)
        if episode.done:
            write_record()
            result = ToolResult(result.text + "\n\nThe episode has ended. You may disconnect.",
                                is_error=result.is_error, images=result.images)
        return types.CallToolResult(content=_content(result), is_error=result.is_error)

    server = Server("discoverygym", version="1", instructions=episode.prompt,
                    on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return EpisodeServer(server, python, write_record)


async def serve_stdio(episode: Episode, record_path: Path, *, interpreter: bool = True) -> None:
    """Run the server on this process's stdin/stdout until the client disconnects."""
    from mcp.server.stdio import stdio_server

    bound = build_server(episode, record_path, interpreter=interpreter)
    try:
        async with stdio_server() as (read, write):
            await bound.server.run(read, write, bound.server.create_initialization_options())
    finally:
        bound.close(None if episode.answered else "client disconnected without an answer")
