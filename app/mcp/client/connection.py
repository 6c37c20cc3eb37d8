"""One MCP server's long-lived connection: started once, kept open, tools re-listed when they change.

One task owns the fastmcp `Client` context for the gateway's lifetime (entering and leaving the context in the same
task), so there is never a process or handshake per request. A server that fails to start, or is lost, is down with
its cause and reconnected with a growing delay; the other servers work on.
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

from app.common.offload import off_loop
from app.common.redaction import redact
from app.common.schema_check import first_error
from app.config import Config, McpServerConfig
from app.mcp.client.catalog_build import unknown_always_load
from app.mcp.client.chatter import Dropped
from app.mcp.client.listing_limits import Listing, bounded_listing
from app.mcp.client.pipe import list_tools
from app.mcp.client.server_log import ServerLog
from app.mcp.client.signals import ListChanged, connection_gone, describe_exception, ping
from app.mcp.client.state import ServerState, ServerUnavailable
from app.mcp.client.stderr import ServerOutput
from app.mcp.client.stdio import build_transport, closed_because, refusal, start_problem

log = logging.getLogger("toolsift.mcp")


RECONNECT_FIRST_DELAY = 1.0
RECONNECT_MAX_DELAY = 30.0
LIVENESS_INTERVAL = 15.0  # an idle connection is pinged this often
LISTING_PACE = 5.0  # a listing that took t seconds is not repeated within 5t
# A server still starting when the gateway stops waiting for it (its start-up timeout) is put down with that cause
# and left to finish its handshake for this long, in the background: one that takes 8 s to start is up at 8 s, not
# never. Past this, the attempt fails like a crash and is retried with the same backoff.
HANDSHAKE_SECONDS = 120.0
CALL_GRACE_SECONDS = 5.0  # a remote answer stream may outlast its request's timeout by this much, then it is cut


class ServerConnection:
    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        settings: Config,
        on_tools: Callable[[], None],
        target: Any = None,
        *,
        on_dropped: Dropped | None = None,
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
        self.output = ServerOutput(name, on_dropped) if target is None and config.command else None
        # What the server logs: one bounded line each, within a budget (never fastmcp's Rich handler on the loop).
        self._server_log = ServerLog(name, on_dropped)
        self._logged_error: str | None = None  # a failure repeated by every reconnect is logged once
        self._lost = asyncio.Event()  # a call saw the connection break
        self._slots = asyncio.Semaphore(settings.max_concurrent_calls_per_server)
        self._client: Client[Any] | None = None
        self._transport: Any = None  # the last connection's transport: a stdio one hands over large listings
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
        except TimeoutError:  # down with the cause; its attempt goes on, and it comes up when it answers
            waited = (
                f"did not start within {self.startup_timeout:g}s (no answer to the MCP handshake; a server that "
                "starts slowly needs a longer mcp_startup_timeout, or its own startup_timeout)"
            )
            self._fail(self._cause(waited, handshake=False))

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
            target = build_transport(
                self.config,
                self._base_dir,
                self._inherit,
                errlog,
                max_message_bytes=self._limits.max_message_bytes,
                on_spawn=self.output.took if self.output is not None else None,
                max_call_bytes=self._limits.max_call_bytes,
                call_seconds=max(self.tool_timeout, self.startup_timeout) + CALL_GRACE_SECONDS,
            )
        client: Client[Any] = Client(
            target,
            message_handler=ListChanged(self.request_refresh),
            log_handler=self._server_log,
            timeout=self.tool_timeout,
            init_timeout=max(self.startup_timeout, HANDSHAKE_SECONDS),
        )
        handshake = False
        self._transport = target
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
                lost = self._cause(closed_because(target) or "connection lost", handshake)
            self._fail(lost)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a broken server must never take the gateway down
            why = closed_because(target) or (refusal(target) if not handshake else None)
            self._fail(why or self._cause(describe_exception(exc), handshake))
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

        A large listing is parsed and checked in the worker pool (app/mcp/client/large_messages.py), but it still
        takes a core while it is, so listings are paced: the next one waits at least `rebuild_interval_seconds`, and
        at least LISTING_PACE times as long as the last one took, so a storm of `list_changed` from a large server
        leaves the gateway's cores free most of the time."""
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
        tools = await list_tools(client, self._transport)
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
