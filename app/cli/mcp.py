"""`toolsift mcp --stdio`: every configured MCP server served as one MCP server, over stdin/stdout."""

from __future__ import annotations

import argparse
import logging
import sys

from app.config import Config
from app.engine.build import build_gateway, running
from app.errors import RequestRefused
from app.mcp.front.server import Front


async def mcp(config: Config, args: argparse.Namespace) -> int:
    """The MCP front over stdio: stdout carries the protocol, so everything else goes to stderr. The gateway runs
    as when serving (keyword search at once, hybrid once the tools are embedded; `run_task` if configured)."""
    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    async with running(build_gateway(config), "mcp") as gateway:
        mode = args.mode or config.mcp_front.mode
        front = Front()
        front.semantic, front.tasks = gateway.semantic, gateway.tasks
        try:
            front.populate(gateway.mcp, config, mode, args.tool_set)
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
        front.keep_in_sync(gateway.mcp, config, mode, args.tool_set)
        await front.server.run_stdio_async(show_banner=False, log_level="WARNING")
        return 0
