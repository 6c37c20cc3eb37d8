"""`toolsift mcp --stdio`: every configured MCP server served as one MCP server, over stdin/stdout."""

from __future__ import annotations

import argparse
import logging
import sys

from app.config import Config
from app.engine.build import build_gateway, running
from app.errors import RequestRefused
from app.fronts.mcp.server import McpFront


async def mcp(config: Config, args: argparse.Namespace) -> int:
    """The MCP front over stdio: stdout carries the protocol, so everything else goes to stderr. The gateway runs
    as when serving (keyword search at once, hybrid once the tools are embedded; `run_task` if configured)."""
    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    async with running(build_gateway(config), "mcp") as gateway:
        front = McpFront(gateway, args.mode or config.mcp_front.mode, args.tool_set)
        try:
            front.served()
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
        await front.server.run_stdio_async(show_banner=False, log_level="WARNING")
        return 0
