"""The one place a Gateway is built and started, for what the process is for.

`serve` (the HTTP gateway) and `mcp` (the MCP front over stdio) run everything: the search model loads in the
background and the index is built at start-up. `inspect` (one `toolsift check`/`tools`/`manifest`/`search`
answer) connects the MCP servers only: the command loads search itself, at once, since it answers one question
and exits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from app.common.heap import release_large_blocks
from app.config import Config
from app.engine.gateway import Gateway

Purpose = Literal["serve", "mcp", "inspect"]


def build_gateway(config: Config, mcp_targets: dict[str, Any] | None = None, *, own_process: bool = False) -> Gateway:
    """The gateway for `config`: MCP connections, providers, search, caches, stores (`mcp_targets` replaces the
    configured servers' transports, for tests). With `own_process`, the gateway is what the process is for, and
    what it builds to last is frozen out of the garbage collector's full passes (see Gateway.freeze_heap), and
    large freed blocks go back to the system (app/common/heap.py), so the stores' byte bounds hold in the process."""
    if own_process:
        release_large_blocks()
    gateway = Gateway(config, mcp_targets)
    gateway.freeze_heap = own_process
    return gateway


@asynccontextmanager
async def running(gateway: Gateway, purpose: Purpose) -> AsyncIterator[Gateway]:
    """`gateway` started for `purpose`, and stopped (MCP sessions closed, clients released) on the way out."""
    if purpose == "inspect":
        await gateway.load_enrichments()
        await gateway.mcp.start()
    else:
        await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.stop()
