"""All configured MCP servers: started together at start-up, one catalog built from what they list (rebuilt in
the worker pool when a listing changes), and every tool call, timed, traced and redacted, in one place.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import mcp_types

from app.common import tracing
from app.common.identity import ANONYMOUS, Identity
from app.common.offload import off_loop
from app.config import Config, McpServerConfig
from app.core.catalog import Catalog
from app.mcp.client.catalog_build import build_catalog
from app.mcp.client.chatter import Dropped
from app.mcp.client.connection import ServerConnection
from app.mcp.client.per_identity import connect_all
from app.mcp.client.pool import ServerPool
from app.mcp.client.results import error_text, redacted, result_text
from app.mcp.client.server_log import quiet_sdk_logs
from app.mcp.client.signals import describe_exception
from app.mcp.client.state import ServerState, ServerUnavailable

log = logging.getLogger("toolsift.mcp")

__all__ = ["McpManager", "ServerConnection"]


class McpManager:
    """All configured servers and the catalog snapshot built from what they list."""

    def __init__(
        self,
        config: Config,
        targets: dict[str, Any] | None = None,
        on_call: Callable[[str, float, bool], None] | None = None,
        on_dropped: Dropped | None = None,
    ) -> None:
        self.config = config
        self._on_call = on_call
        self._on_dropped = on_dropped  # what servers said that the log did not take (stderr, log messages)
        quiet_sdk_logs()  # the SDK logs once per bad message a server sends: within a budget
        self.on_started: Callable[[str, str], None] | None = None  # progress: (server, state) as each one settles
        # Run in the worker pool with each new catalog before it is published (indexes, manifests): a request
        # never finds a catalog whose discovery is still to build.
        self.preparers: list[Callable[[Catalog], None]] = []
        self.listeners: list[Callable[[], None]] = []  # called on the loop after every catalog rebuild
        self.connections, self.per_identity = connect_all(
            config, targets or {}, self._changed, self._connect, self._shared
        )
        self._version = 0
        self.catalog: Catalog = build_catalog(config, {}, 0)
        self.started_at = time.monotonic()
        self.rebuilds = 0
        self._dirty = False
        self._rebuilt_at = -float("inf")
        self._rebuilding: asyncio.Task[None] | None = None

    def _connect(
        self, name: str, config: McpServerConfig, settings: Config, on_tools: Callable[[], None], target: Any = None
    ) -> ServerConnection:
        return ServerConnection(name, config, settings, on_tools, target, on_dropped=self._on_dropped)

    def _shared(self, name: str, server: McpServerConfig, target: Any) -> ServerConnection | ServerPool:
        """A server every caller shares: one connection, or a pool of its `instances` (stdio processes)."""
        members = [self._connect(name, server, self.config, self._changed, target) for _ in range(server.instances)]
        return members[0] if len(members) == 1 else ServerPool(name, members)

    def _changed(self) -> None:
        """A server's tools changed: rebuild now, or once at the end of the interval if one just ran, so a storm
        of changes costs one rebuild per `rebuild_interval_seconds`."""
        self._dirty = True
        if self._rebuilding is None or self._rebuilding.done():
            self._rebuilding = asyncio.create_task(self._rebuild_while_dirty(), name="mcp:rebuild")

    async def _rebuild_while_dirty(self) -> None:
        interval = self.config.mcp_limits.rebuild_interval_seconds
        while self._dirty:
            await asyncio.sleep(max(0.0, self._rebuilt_at + interval - time.monotonic()))
            self._dirty = False
            self._rebuilt_at = time.monotonic()
            await self._rebuild()

    async def _rebuild(self) -> None:
        self._version += 1
        listings = {name: conn.tools for name, conn in self.connections.items() if conn.state is ServerState.UP}
        try:
            self.catalog = await off_loop(self._build, listings, self._version)
        except Exception:  # a catalog that cannot be built leaves the last one serving
            log.exception("mcp catalog rebuild failed")
            return
        self.rebuilds += 1
        for listener in self.listeners:
            listener()

    def _build(self, listings: dict[str, list[mcp_types.Tool]], version: int) -> Catalog:
        catalog = build_catalog(self.config, listings, version)
        for prepare in self.preparers:
            prepare(catalog)
        return catalog

    async def settled(self) -> None:
        """Wait for the rebuilds that changes so far asked for."""
        while self._rebuilding is not None and not self._rebuilding.done():
            await asyncio.shield(self._rebuilding)

    async def start(self) -> None:
        async def start_one(connection: ServerConnection | ServerPool) -> None:
            await connection.start()
            if self.on_started is not None:
                self.on_started(connection.name, connection.state.value)

        await asyncio.gather(*(start_one(connection) for connection in self.connections.values()))
        await self.settled()

    async def stop(self) -> None:
        if self._rebuilding is not None:
            self._rebuilding.cancel()
        await asyncio.gather(*(connection.stop() for connection in self.connections.values()))
        await asyncio.gather(*(pool.stop() for pool in self.per_identity.values()))

    async def call_raw(
        self, server: str, tool: str, arguments: dict[str, Any], identity: Identity = ANONYMOUS, *, call_id: str = ""
    ) -> mcp_types.CallToolResult:
        """The backend's own result, secrets redacted (the MCP front passes it through; `call_tool` makes it text),
        on `identity`'s own connection for a server that acts as each caller. Every call that reaches a server is
        timed here, once, for the metrics, and traced: its span is current while it runs, so the MCP client's own
        span and the trace context sent to the server go below it."""
        attributes = {tracing.OPERATION: "execute_tool", tracing.TOOL_NAME: tool, tracing.TOOL_CALL_ID: call_id or None}
        with tracing.span(f"execute_tool {tool}", {**attributes, tracing.MCP_SERVER: server}, "client") as span:
            connection = self.connections.get(server)
            if connection is None:
                raise ServerUnavailable(f"unknown MCP server '{server}'")
            started = time.perf_counter()
            failed = True
            try:
                pool = self.per_identity.get(server)
                if pool is None:
                    result = redacted(await connection.call(tool, arguments))
                else:
                    async with pool.use(identity) as own:
                        result = redacted(await own.call(tool, arguments))
                failed = bool(result.is_error)
                if failed:
                    span.fail("tool_error", "the tool reported an error")
                return result
            finally:
                if self._on_call is not None:
                    self._on_call(server, time.perf_counter() - started, failed)

    async def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any], identity: Identity = ANONYMOUS, *, call_id: str = ""
    ) -> tuple[str, bool]:
        """Run one tool as `identity`; return the result text and whether it failed. Failures become text."""
        limit = self.config.tool_result_max_chars
        try:
            result = await self.call_raw(server, tool, arguments, identity, call_id=call_id)
        except ServerUnavailable as exc:
            message = str(exc)
        except Exception as exc:  # transport and protocol errors go back to the model as text
            if isinstance(exc, TimeoutError) or "timed out" in str(exc):
                timeout = self.connections[server].tool_timeout
                message = f"'{tool}' on MCP server '{server}' timed out after {timeout:g}s"
            else:
                message = f"MCP server '{server}' failed to run '{tool}': {describe_exception(exc)}"
        else:
            if result.is_error:
                log.info("mcp tool error server=%s tool=%s", server, tool)
            return result_text(result, limit), bool(result.is_error)
        log.warning("mcp call failed server=%s tool=%s error=%s", server, tool, message)
        return error_text(message, limit), True

    def health(self) -> dict[str, dict[str, Any]]:
        deferral = self.catalog.deferral.servers
        return {
            name: {
                "state": conn.state.value,
                "transport": conn.transport_name,
                "tools": len(conn.tools),
                "deferred": deferral[name].deferred,
                "error": conn.error,
                **({"limits": list(conn.notes)} if conn.notes else {}),
                **({"identities": self.per_identity[name].opened()} if name in self.per_identity else {}),
                **({"instances": conn.instances()} if isinstance(conn, ServerPool) else {}),
                # Why a stdio server is down, in its own words; a running server's chatter stays in the log.
                **({"stderr": conn.stderr()} if conn.state is ServerState.DOWN and conn.stderr() else {}),
            }
            for name, conn in self.connections.items()
        }
