"""An MCP server that starts only once the file named by its `START_GATE` variable exists (at once when unset or
empty), having written `<gate>.waiting`: a server that takes as long to start for one identity as a test wants.
Its tool says whether it waited (not which identity it serves: an identity's secrets are redacted from answers)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("gated")
GATE = os.environ.get("START_GATE")


@mcp.tool
def started() -> str:
    """Whether this server waited for its gate before it started."""
    return "after its gate" if GATE else "at once"


if __name__ == "__main__":
    if GATE:
        Path(f"{GATE}.waiting").touch()
    while GATE and not Path(GATE).exists():
        time.sleep(0.05)
    mcp.run(show_banner=False, log_level="WARNING")
