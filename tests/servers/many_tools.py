"""A stdio MCP server with MANY_TOOLS tools (default 2,000) of about 300 characters of description each: its
listing is one line of about a megabyte."""

from __future__ import annotations

import os

from fastmcp import FastMCP
from fastmcp.tools import Tool

mcp = FastMCP("many")
for number in range(int(os.environ.get("MANY_TOOLS", "2000"))):
    description = f"Look up record {number} in ledger {number % 97}. " + "Returns the record with its history. " * 7
    properties = {"record_id": {"type": "string", "description": f"The record's id (ledger {number % 97})"}}
    tool = Tool(
        name=f"lookup_{number}", description=description, parameters={"type": "object", "properties": properties}
    )
    mcp._local_provider._components[tool.key] = tool  # fastmcp's add_tool compares each with all the others

if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
