"""A stdio MCP server with one slow tool that records, in a file, whether it finished or was cancelled."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("slow")
MARKER = Path(os.environ.get("SLOW_MARKER", "slow-marker.txt"))


@mcp.tool
async def long_report(topic: str) -> str:
    """Compile a long report on a topic (takes a while)."""
    MARKER.write_text("started")
    try:
        await asyncio.sleep(20)
    except asyncio.CancelledError:
        MARKER.write_text("cancelled")
        raise
    MARKER.write_text("finished")
    return f"report on {topic}"


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
