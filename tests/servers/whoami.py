"""A stdio MCP server that says which process answered: for calls spread over a server's instances.

`whoami` holds its process for `seconds`, one call at a time (as many real servers serve them), and answers
with its PID.
"""

from __future__ import annotations

import os
import threading
import time

from fastmcp import FastMCP

mcp = FastMCP("whoami")
ONE_AT_A_TIME = threading.Lock()  # fastmcp runs a synchronous tool in a thread; many servers serve one call at once


@mcp.tool
def whoami(seconds: float = 0.0) -> str:
    """Wait `seconds` (blocking this process), then say which process answered."""
    with ONE_AT_A_TIME:
        time.sleep(min(seconds, 30.0))
    return f"pid {os.getpid()}"


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
