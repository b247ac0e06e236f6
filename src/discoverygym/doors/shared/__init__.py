"""What several doors share: the sandboxed `python` tool (interpreter_tool.py), the one
way a record keeps the agent's tool and python calls (call_log.py), and the audit's
attacks through that tool (interpreter_attacks.py)."""
