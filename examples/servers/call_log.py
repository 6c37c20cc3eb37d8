"""A demo server's own record of the tools it ran: with `DEMO_CALL_LOG` set to a file, each call appends one line,
`<server> <tool>`, when it finishes. It is how to check from outside that a tool ran exactly once."""

from __future__ import annotations

import os
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware


class CallLog(Middleware):
    def __init__(self, server: str, path: str) -> None:
        self.server = server
        self.path = path

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        result = await call_next(context)
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(f"{self.server} {context.message.name}\n")
        return result


def logged(mcp: FastMCP) -> FastMCP:
    """`mcp`, recording its calls where `DEMO_CALL_LOG` says (unchanged without it)."""
    path = os.environ.get("DEMO_CALL_LOG")
    if path:
        mcp.add_middleware(CallLog(mcp.name, path))
    return mcp
