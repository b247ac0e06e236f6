"""The MCP door (the `[mcp]` extra): one episode served over stdio to any MCP client,
`discoverygym mcp SUITE TASK --record FILE` (server.py; cli.py mounts the command)."""
