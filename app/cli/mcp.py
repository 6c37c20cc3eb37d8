"""`toolsift mcp --stdio`: every configured MCP server served as one MCP server, over stdin/stdout."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys

from app.cli.stdio_handshake import EarlyInitialize
from app.config import Config
from app.engine.api import Engine
from app.fronts.mcp.handshake import initialize_result


async def mcp(config: Config, args: argparse.Namespace) -> int:
    """The MCP front over stdio: stdout carries the protocol, so everything else goes to stderr. The gateway runs
    as when serving (keyword search at once, hybrid once the tools are embedded; `run_task` if configured). It
    answers `initialize` at once, before it even imports the gateway (app/cli/stdio_handshake.py), and starts the
    servers behind it (its other requests wait for that start, at most the start-up timeout): a client that gives
    up on `initialize` after 15 s (the MCP Inspector) never waits for the slowest server, and it is told
    `list_changed` as each later one comes up."""
    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    early = EarlyInitialize(initialize_result)  # answered while the gateway's libraries are imported
    from app.common.errors import RequestRefused
    from app.engine.build import build_gateway  # a second of imports: after `initialize` is answered
    from app.fronts.mcp.server import McpFront

    gateway = build_gateway(config)
    front = McpFront(Engine(gateway), args.mode or config.mcp_front.mode, args.tool_set)
    try:
        front.served()
    except RequestRefused as exc:
        print(f"toolsift: {exc.message}", file=sys.stderr)
        return 2
    front.push_list_changed()
    starting = front.starting = asyncio.create_task(gateway.start(), name="gateway start")
    try:
        await asyncio.to_thread(early.wait)  # the client's first message, answered if it was `initialize`
        early.install()
        await front.server.run_stdio_async(show_banner=False, log_level="WARNING")
    finally:
        if not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
        await gateway.stop()
    return 0
