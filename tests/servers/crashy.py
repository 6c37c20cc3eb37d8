"""A stdio MCP server that can be made to die mid-call or to hang, for fault tests."""

from __future__ import annotations

import asyncio
import os

from fastmcp import FastMCP

mcp = FastMCP("crashy")


@mcp.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool
def crash() -> str:
    """Kill this server process in the middle of the call."""
    os._exit(3)


@mcp.tool
async def hang() -> str:
    """Never answer."""
    await asyncio.sleep(3600)
    return "unreachable"


@mcp.tool
def huge(megabytes: int = 10) -> str:
    """Return a very large result."""
    return "x" * (megabytes * 1024 * 1024)


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
