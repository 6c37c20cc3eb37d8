"""The MCP front: toolsift as one MCP server for MCP clients (Claude Desktop, Cursor, Claude Code, VS Code), over
stdio (`toolsift mcp --stdio`) or streamable HTTP (`/mcp`, mounted by the server edge).

A front like the others: it serves the engine's catalog, discovery and loaded-tools rules in MCP's terms, and
keeps what each client enabled in the gateway's one store. The MCP *client* (connections to backend servers) is
app/mcp/.
"""
