"""Long-lived MCP connections: started together at start-up, kept open, tools re-listed when they change.

Each server gets one task that owns its fastmcp `Client` context for the gateway's lifetime (entering and
leaving the context in the same task), so there is never a process or handshake per request. A server that
fails to start is reported as down; the others work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import mcp_types
from fastmcp import Client

from app import tracing
from app.config import Config, McpServerConfig
from app.core.catalog import Catalog
from app.identity import ANONYMOUS, Identity
from app.mcp.client.catalog import build_catalog, unknown_always_load
from app.mcp.client.identities import connect_all
from app.mcp.client.limits import Listing, bounded_listing
from app.mcp.client.pool import ServerPool
from app.mcp.client.results import error_text, redacted, result_text
from app.mcp.client.signals import ListChanged, connection_gone, describe_exception, ping
from app.mcp.client.state import ServerState, ServerUnavailable
from app.mcp.client.stderr import ServerOutput
from app.mcp.client.stdio import build_transport, start_problem
from app.offload import off_loop
from app.redaction import redact
from app.schema_check import first_error

log = logging.getLogger("toolsift.mcp")


RECONNECT_FIRST_DELAY = 1.0
RECONNECT_MAX_DELAY = 30.0
LIVENESS_INTERVAL = 15.0  # an idle connection is pinged this often
LISTING_PACE = 5.0  # a listing that took t seconds is not repeated within 5t


class ServerConnection:
    def __init__(
        self, name: str, config: McpServerConfig, settings: Config, on_tools: Callable[[], None], target: Any = None
    ) -> None:
        self.name = name
        self.config = config
        self.transport_name = "memory" if target is not None else config.transport_name
        self.state = ServerState.DISABLED if config.disabled else ServerState.CONNECTING
        self.error: str | None = None
        self.tools: list[mcp_types.Tool] = []
        self.notes: list[str] = []  # what the listing limits cut or dropped, for /healthz
        self._fingerprint = b""
        self._limits = settings.mcp_limits
        self._listed_at = -float("inf")
        self._listing_seconds = 0.0  # how long the last listing took, to pace the next
        self._output_schemas: dict[str, dict[str, Any]] = {}
        self.startup_timeout = config.startup_timeout or settings.mcp_startup_timeout
        self.tool_timeout = config.tool_timeout or settings.tool_call_timeout
        self._ttl = settings.tool_cache_ttl
        self._on_tools = on_tools
        self._target = target  # an in-process server (tests); otherwise a fresh transport per connection
        self._base_dir = settings.base_dir
        self._inherit = settings.mcp_inherit_env
        # A stdio server's stderr tail and exit, for the cause of a failure.
        self.output = ServerOutput(name) if target is None and config.command else None
        self._logged_error: str | None = None  # a failure repeated by every reconnect is logged once
        self._lost = asyncio.Event()  # a call saw the connection break
        self._slots = asyncio.Semaphore(settings.max_concurrent_calls_per_server)
        self._client: Client[Any] | None = None
        self._ready = asyncio.Event()
        self._refresh = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect and list tools, waiting at most the start-up timeout; never raises."""
        if self.state is ServerState.DISABLED:
            return
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.startup_timeout)
        except TimeoutError:
            waited = f"did not start within {self.startup_timeout:g}s (no answer to the MCP handshake)"
            self._fail(self._cause(waited, handshake=False))
            self._task.cancel()

    async def _run(self) -> None:
        """Connect, serve, and when the server dies or drops, reconnect with backoff, for the gateway's life."""
        delay = RECONNECT_FIRST_DELAY
        while True:
            await self._connect_and_serve()
            self._ready.set()
            log.info("mcp reconnect server=%s in_s=%.1f", self.name, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_DELAY)

    async def _connect_and_serve(self) -> None:
        errlog = self.output.open() if self.output is not None else None
        target = self._target
        if target is None:
            target = build_transport(self.config, self._base_dir, self._inherit, errlog)
        client: Client[Any] = Client(
            target,
            message_handler=ListChanged(self.request_refresh),
            timeout=self.tool_timeout,
            init_timeout=self.startup_timeout,
        )
        handshake = False
        try:
            async with client:
                handshake = True
                self._client = client
                # The SDK checks a structured result against the tool's output schema on the event loop with
                # Python's backtracking `re` (a hostile server's `pattern` would be a ReDoS); ours runs on RE2, in
                # the worker pool.
                setattr(client.session, "validate_tool_result", self._check_result)  # noqa: B010
                self._listed(await self._list(client))
                self.state, self.error = ServerState.UP, None
                log.info(
                    "mcp server up server=%s transport=%s tools=%d", self.name, self.transport_name, len(self.tools)
                )
                self._on_tools()
                self._ready.set()
                await self._refresh_while_alive(client)
                if self.output is not None:
                    await self.output.settle(1.0)  # did it exit, or stop answering?
                lost = self._cause("connection lost", handshake)
            self._fail(lost)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a broken server must never take the gateway down
            self._fail(self._cause(describe_exception(exc), handshake))
        finally:
            self._client = None
            if self.output is not None:
                self.output.ended()

    def _cause(self, what: str, handshake: bool) -> str:
        if self.output is None:
            return what
        problem = None if handshake else start_problem(self.config, self._base_dir, self._inherit)
        return self.output.cause(what, problem)

    async def _refresh_while_alive(self, client: Client[Any]) -> None:
        """Re-list tools on `list_changed` and on the TTL; ping while idle as a liveness probe (fastmcp keeps
        reporting a dead stdio process as connected); return when a call, ping or listing found it gone.

        A listing is parsed by the MCP SDK on the event loop (about 0.1 s per 1,000 tools), so listings are paced:
        the next one waits at least `rebuild_interval_seconds`, and at least LISTING_PACE times as long as the
        last one took, so a storm of `list_changed` from a large server leaves the loop free most of the time."""
        while not self._lost.is_set():
            wait = LIVENESS_INTERVAL
            if self._ttl:
                wait = max(0.0, min(wait, self._listed_at + self._ttl - time.monotonic()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lost_or_refresh(), wait)
            if self._lost.is_set():
                break
            expired = bool(self._ttl) and time.monotonic() >= self._listed_at + self._ttl
            if not self._refresh.is_set() and not expired:
                await ping(client)
                continue
            pause = max(self._limits.rebuild_interval_seconds, LISTING_PACE * self._listing_seconds)
            await asyncio.sleep(max(0.0, self._listed_at + pause - time.monotonic()))
            self._refresh.clear()
            listing = await self._list(client)
            if listing.fingerprint != self._fingerprint:
                self._listed(listing)
                log.info("mcp tools changed server=%s tools=%d", self.name, len(listing.tools))
                self._on_tools()
        self._lost.clear()

    async def _list(self, client: Client[Any]) -> Listing:
        """The server's tools within the limits, checked in the worker pool (thousands of tools are megabytes)."""
        started = time.monotonic()
        tools = await client.list_tools()
        self._listed_at = time.monotonic()
        self._listing_seconds = self._listed_at - started
        return await off_loop(bounded_listing, tools, self._limits)

    async def _check_result(self, name: str, result: mcp_types.CallToolResult) -> None:
        """What the MCP SDK's `validate_tool_result` checks, with the same errors, bounded (see schema_check)."""
        schema = self._output_schemas.get(name)
        if schema is None:
            return
        if result.structured_content is None and "structured_content" not in result.model_fields_set:
            raise RuntimeError(f"Tool {name} has an output schema but did not return structured content")
        error = await off_loop(first_error, result.structured_content, schema)
        if error is not None:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {error.message}")

    def _listed(self, listing: Listing) -> None:
        """Take a new listing; what the limits cut, and `always_load` names it lacks, are warnings."""
        self.tools, self.notes, self._fingerprint = listing.tools, listing.notes, listing.fingerprint
        self._output_schemas = {tool.name: tool.output_schema for tool in self.tools if tool.output_schema}
        for note in listing.notes:
            log.warning("mcpServers.%s: %s", self.name, note)
        tools = listing.tools
        unknown = unknown_always_load(self.config, (tool.name for tool in tools))
        if unknown:
            log.warning(
                "mcpServers.%s.always_load: unknown tools %s; the server's tools are: %s",
                self.name,
                ", ".join(unknown),
                ", ".join(sorted(tool.name for tool in tools)) or "(none)",
            )

    async def _lost_or_refresh(self) -> None:
        lost = asyncio.ensure_future(self._lost.wait())
        refresh = asyncio.ensure_future(self._refresh.wait())
        waits: set[asyncio.Future[Any]] = {lost, refresh}
        if self.output is not None:  # a stdio process that exits is lost at once
            waits.add(asyncio.ensure_future(self._exited()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _exited(self) -> None:
        assert self.output is not None
        await self.output.exited()
        self._lost.set()

    def request_refresh(self) -> None:
        self._refresh.set()

    def _fail(self, message: str) -> None:
        was_up = self.state is ServerState.UP
        message = redact(message)  # connection errors can quote a URL with its token; /healthz shows this
        self.state, self.error, self.tools, self._fingerprint = ServerState.DOWN, message, [], b""
        repeated = message == self._logged_error and not was_up
        log.log(logging.INFO if repeated else logging.WARNING, "mcp server down server=%s error=%s", self.name, message)
        self._logged_error = message
        self._ready.set()
        if was_up:
            self._on_tools()

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        client = self._client
        if client is None or self.state is not ServerState.UP:
            raise ServerUnavailable(
                f"MCP server '{self.name}' is {self.state.value}" + (f": {self.error}" if self.error else "")
            )
        try:
            async with self._slots:  # a burst of calls queues here instead of flooding one server
                return await client.call_tool_mcp(tool, arguments, timeout=self.tool_timeout)
        except Exception as exc:
            if connection_gone(exc):
                self._lost.set()  # reconnect now rather than at the next liveness check
            raise

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 5)
        if self.output is not None:
            self.output.close()

    def stderr(self) -> list[str]:
        """The last lines the server wrote on stderr, secrets redacted (a traceback can quote its `env`)."""
        return [redact(line) for line in self.output.tail] if self.output is not None else []


class McpManager:
    """All configured servers and the catalog snapshot built from what they list."""

    def __init__(
        self,
        config: Config,
        targets: dict[str, Any] | None = None,
        on_call: Callable[[str, float, bool], None] | None = None,
    ) -> None:
        self.config = config
        self._on_call = on_call
        self.on_started: Callable[[str, str], None] | None = None  # progress: (server, state) as each one settles
        # Run in the worker pool with each new catalog before it is published (indexes, manifests): a request
        # never finds a catalog whose discovery is still to build.
        self.preparers: list[Callable[[Catalog], None]] = []
        self.listeners: list[Callable[[], None]] = []  # called on the loop after every catalog rebuild
        self.connections, self.per_identity = connect_all(
            config, targets or {}, self._changed, ServerConnection, self._shared
        )
        self._version = 0
        self.catalog: Catalog = build_catalog(config, {}, 0)
        self.started_at = time.monotonic()
        self.rebuilds = 0
        self._dirty = False
        self._rebuilt_at = -float("inf")
        self._rebuilding: asyncio.Task[None] | None = None

    def _shared(self, name: str, server: McpServerConfig, target: Any) -> ServerConnection | ServerPool:
        """A server every caller shares: one connection, or a pool of its `instances` (stdio processes)."""
        members = [ServerConnection(name, server, self.config, self._changed, target) for _ in range(server.instances)]
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
