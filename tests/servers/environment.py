"""A stdio MCP server that tells what environment it was started with, and says a few lines on stderr first."""

from __future__ import annotations

import os
import sys

from fastmcp import FastMCP

mcp = FastMCP("environment")


@mcp.tool
def variables() -> dict[str, str]:
    """Every environment variable this server process got."""
    return dict(os.environ)


@mcp.tool
def working_directory() -> str:
    """Where this server process started."""
    return os.getcwd()


if __name__ == "__main__":
    print("environment server: starting", file=sys.stderr, flush=True)
    mcp.run(show_banner=False, log_level="WARNING")
