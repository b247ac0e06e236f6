"""What several doors share: the sandboxed `python` tool (interpreter_tool.py), the one
way a record keeps the agent's tool and python calls (call_log.py), a tool result as
MCP content (mcp_content.py), and the audit's attacks through the python tool
(interpreter_attacks.py)."""
