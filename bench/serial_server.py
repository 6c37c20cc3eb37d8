"""The finance example server, slowed down and serialised: each tool call takes `--call-ms` milliseconds and one
process serves one call at a time, like real stdio servers that do one thing at a time (one SQLite connection, one
browser, one git checkout). `bench/load.py --call-ms MS` starts this in place of examples/servers/finance.py: the
same server object (same name, instructions, tools and answers), with a middleware in front of its tool calls.

    python bench/serial_server.py --call-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp_types import CallToolRequestParams

FINANCE = Path(__file__).resolve().parent.parent / "examples" / "servers" / "finance.py"


class OneCallAtATime(Middleware):
    """Holds one lock per process for the whole of each tool call, sleeping `call_ms` before the tool runs: calls
    that arrive together wait their turn, so one process serves at most 1000 / call_ms calls a second."""

    def __init__(self, call_ms: float) -> None:
        self.seconds = call_ms / 1000
        self.lock = asyncio.Lock()

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: CallNext[CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        async with self.lock:
            await asyncio.sleep(self.seconds)
            return await call_next(context)


def serial_finance(call_ms: float) -> FastMCP:
    """A fresh copy of the finance example server (its module loaded anew, so no other user of it is changed) whose
    tool calls take `call_ms` ms each, one at a time."""
    spec = importlib.util.spec_from_file_location("serial_finance", FINANCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server: FastMCP = module.mcp
    server.add_middleware(OneCallAtATime(call_ms))
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--call-ms", type=float, required=True, help="milliseconds per tool call (> 0)")
    args = parser.parse_args()
    if not 0 < args.call_ms <= 10_000:
        raise SystemExit("--call-ms: more than 0 and at most 10000")
    serial_finance(args.call_ms).run(show_banner=False, log_level="WARNING")


if __name__ == "__main__":
    main()
