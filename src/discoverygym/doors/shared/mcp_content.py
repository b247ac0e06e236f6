"""A tool result as MCP content blocks (its text, then each PNG as an image block):
what every door that speaks MCP sends (the MCP door, the verifiers door's tool server)."""

from __future__ import annotations

import base64
from typing import Any

from ...core import ToolResult


def mcp_content(result: ToolResult) -> list[Any]:
    import mcp.types as types

    blocks: list[Any] = [types.TextContent(type="text", text=result.text)]
    for png in result.images:
        blocks.append(types.ImageContent(type="image", mime_type="image/png",
                                         data=base64.b64encode(png).decode("ascii")))
    return blocks
