"""An MCP server (stdio) for bench/abuse.py: `TOOLS` generated tools (default 10,000) in the words real servers
use, and `storm`, which adds tools one at a time and announces each with tools/list_changed.

    TOOLS=10000 python bench/hostile_mcp.py
"""

from __future__ import annotations

import os

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.tools import Tool

VERBS = "create get list update delete search export import archive restore sync share".split()
NOUNS = (
    "issue project invoice customer order ticket calendar_event document folder user team report dashboard "
    "pipeline deployment alert message channel contact lead campaign repository branch release"
).split()
AREAS = "billing sales support engineering marketing finance operations security analytics hr".split()

server = FastMCP("hostile")


def generated(i: int) -> Tool:
    verb, noun, area = VERBS[i % len(VERBS)], NOUNS[i // len(VERBS) % len(NOUNS)], AREAS[i % len(AREAS)]
    description = (
        f"{verb.capitalize()} a {noun.replace('_', ' ')} in the {area} workspace (variant {i}). Returns the "
        f"{noun.replace('_', ' ')} with its id, owner, status and timestamps; fails when the caller lacks access."
    )
    properties = {
        f"{noun}_id": {"type": "string", "description": f"The {noun.replace('_', ' ')}'s id"},
        "workspace": {"type": "string", "description": f"The {area} workspace"},
    }
    return Tool(
        name=f"{verb}_{noun}_{i}", description=description, parameters={"type": "object", "properties": properties}
    )


# Straight into the server's store: fastmcp's add_tool compares each new tool with every one already added.
_store = server._local_provider._components
for number in range(int(os.environ.get("TOOLS", "10000"))):
    tool = generated(number)
    _store[tool.key] = tool


@server.tool
async def storm(ctx: Context, count: int = 50) -> str:
    """Add `count` tools, announcing each with tools/list_changed."""
    start = len(await server.list_tools())
    for i in range(count):
        server.add_tool(generated(start + i))
        await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return f"added {count} tools"


if __name__ == "__main__":
    server.run(show_banner=False)
