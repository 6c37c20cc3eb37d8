"""toolsift as one MCP server: every configured server's tools under the same `{server}__{tool}` names, toolsets
and search index as the HTTP API, exposed three ways:

- `lazy`: `tools/list` shows the loaded tools and `search_tools`; a search enables the found tools for this
  client and the client gets `notifications/tools/list_changed`. What a client enabled is kept by the engine in
  the gateway's store, which `search_tools`, `tools/list` and `tools/call` all read, so they never disagree, and
  replicas share it.
- `proxy`: fixed meta-tools for clients that ignore `list_changed`: `search_tools` answers full schemas and
  `call_tool(name, arguments)` validates the arguments and runs the tool.
- `full`: a transparent aggregate of every tool.

The tools are served through fastmcp's provider seam (`CatalogTools`), built from the engine's listing once per
catalog version. Everything else is an engine verb (app/engine/api.py): search, call, the refusal of a tool the
caller may not call, a client's view, `run_task`; this module only gives them MCP's shape.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.server.providers import Provider
from fastmcp.tools.base import Tool, ToolResult

from app import toolsift_version
from app.common import tracing
from app.common.identity import Identity
from app.common.logs import REQUEST_ID
from app.core.catalog import ToolScope
from app.engine.api import Client, ClientView, Engine
from app.fronts.mcp import handshake
from app.fronts.mcp.clients import calling_client
from app.fronts.mcp.redacted_results import RedactedResults
from app.fronts.mcp.run_task import RunTask
from app.fronts.mcp.tools import ForwardedTool, ProxyCall, SearchTool
from app.fronts.shapes import JSONRPC, ErrorShape

Mode = Literal["lazy", "proxy", "full"]


@dataclass
class Served:
    """What the front serves for one catalog version."""

    version: int
    tools: dict[str, Tool] = field(default_factory=dict)
    deferred: frozenset[str] = frozenset()  # lazy mode's: hidden until a client enables them
    # What the tool list is made of, the same on every replica (catalog versions are per process), so a client
    # that moves between replicas is told of a change only when there was one.
    fingerprint: str = ""


class McpFront:
    """One MCP server over the gateway's catalog for one tool set: its tools follow the backends, and each
    client is told when its list changed."""

    shape: ErrorShape = JSONRPC  # every refusal of a JSON-RPC message: a JSON-RPC error

    def __init__(
        self, engine: Engine, mode: Mode, tool_set: ToolScope = None, note: str = "", auth: Any = None
    ) -> None:
        """`note` is added to proxy's search_tools description; `auth` verifies HTTP clients' gateway keys."""
        self.engine = engine
        self.mode = mode
        self.tool_set = tool_set
        self.note = note
        self._served = Served(-1)
        self.server = FastMCP(
            handshake.NAME,
            version=toolsift_version(),  # else fastmcp's own version is what clients see in serverInfo
            instructions=handshake.INSTRUCTIONS,
            auth=auth,
            providers=[CatalogTools(self)],
        )
        self.server.add_middleware(RedactedResults())  # outermost: it sees every result, refusals included
        self.server.add_middleware(ClientMiddleware(self))
        self.pushes = False  # tell the client of every change at once (push_list_changed)
        self.session: Any = None  # the client told of every change, where the front pushes (stdio: one client)
        self._pushes: set[asyncio.Task[None]] = set()
        self.starting: asyncio.Task[None] | None = None  # the gateway's start, when `initialize` does not wait for it

    def push_list_changed(self) -> None:
        """Tell the connected clients `list_changed` as soon as the catalog changes (a server came up or listed
        new tools), not on their next request: over stdio a client may wait for the news before asking again."""
        self.pushes = True
        self.engine.on_catalog_change(self._catalog_changed)

    def _catalog_changed(self) -> None:
        if self.session is not None:
            task = asyncio.create_task(self.session.send_tool_list_changed())
            self._pushes.add(task)
            task.add_done_callback(self._pushed)

    def _pushed(self, task: asyncio.Task[None]) -> None:
        self._pushes.discard(task)
        if not task.cancelled() and task.exception() is not None:  # a client gone: it is told nothing more
            self.session = None

    def served(self) -> Served:
        """The tools of the catalog as it is now, rebuilt once per catalog version. Raises RequestRefused for an
        unknown tool set (call it once at start to find out)."""
        if self._served.version != self.engine.catalog.version:
            self._served = self._build()
        return self._served

    def _build(self) -> Served:
        engine, scope, lazy = self.engine, self.tool_set, self.mode == "lazy"
        listing = engine.listing(scope, self.mode, self.note)
        served = Served(listing.version, deferred=listing.deferred)
        tools: list[Tool] = [
            ForwardedTool(entry, engine, scope, self.calling_client)
            for entry in listing.entries
            if listing.search is None or self.mode == "lazy" or not entry.deferred
        ]
        if listing.search is not None:
            tools.append(SearchTool(listing.search, engine, scope, self.calling_client, proxy=not lazy))
            if self.mode == "proxy":
                tools.append(ProxyCall(engine, scope, self.calling_client))
        if engine.runs_tasks:
            tools.append(RunTask(engine, scope, self.calling_client))
        served.tools = {tool.name: tool for tool in tools}
        listed = "\n".join(sorted(served.tools)) + "\n\n" + "\n".join(sorted(served.deferred))
        served.fingerprint = hashlib.sha256(listed.encode()).hexdigest()[:16]
        return served

    def calling_client(self) -> Client:
        return calling_client(self.tool_set, self.engine.identities)

    def caller(self) -> Identity:
        return self.calling_client()[0]


class CatalogTools(Provider):
    """fastmcp's provider seam: the front's tools for the current catalog version, whatever it is when asked."""

    def __init__(self, front: McpFront) -> None:
        super().__init__()
        self.front = front

    async def _list_tools(self) -> Sequence[Tool]:
        return list(self.front.served().tools.values())

    async def _get_tool(self, name: str, version: Any = None) -> Tool | None:
        return self.front.served().tools.get(name)


SERVED_METHODS = ("tools/", "resources/", "prompts/")  # what the servers behind the front answer


class ClientMiddleware(Middleware):
    """Tells a client its tool list changed (on its next request, the only channel a sessionless protocol
    has), hides the deferred tools a client has not enabled, and answers a call of one with the engine's words."""

    def __init__(self, front: McpFront) -> None:
        self.front = front

    async def on_request(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        session = context.fastmcp_context
        if session is not None and self.front.pushes:
            self.front.session = session.session
        if self.front.starting is not None and str(context.method).startswith(SERVED_METHODS):
            await asyncio.shield(self.front.starting)  # the servers the gateway starts with, up or given up on
        if session is not None and context.method != "initialize":
            fingerprint = self.front.served().fingerprint
            client = self.front.calling_client()
            if (await self.front.engine.client_view(client)).seen != fingerprint:  # read alone: most requests stop here
                seen: list[str | None] = []

                def see(view: ClientView) -> bool:
                    seen.append(view.seen)
                    view.seen = fingerprint
                    return seen[0] != fingerprint

                await self.front.engine.update_client(client, see)
                if seen[0] not in (None, fingerprint):
                    await session.send_notification(mcp_types.ToolListChangedNotification())
        if not tracing.enabled() or session is None or context.method != "tools/call":
            return await call_next(context)
        caller = tracing.caller_attributes(self.front.calling_client()[0].id, REQUEST_ID.get(), "mcp")
        with tracing.caller_scope(caller):
            return await call_next(context)  # a tool call's spans (a search, an MCP call, a task) carry its caller

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        tools = await call_next(context)
        deferred = self.front.served().deferred
        if not deferred:
            return tools
        hidden = deferred - set((await self.front.engine.client_view(self.front.calling_client())).enabled)
        return [tool for tool in tools if tool.name not in hidden]

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        """A deferred tool the client has not enabled, or a tool it is not served, is refused with the engine's
        words, those a chat's model reads."""
        front, name = self.front, context.message.name
        if name in front.served().deferred:
            refusal = await front.engine.refusal(front.calling_client(), front.tool_set, name, lazy=True)
            if refusal is not None:
                return ToolResult(content=refusal, is_error=True)
        try:
            return await call_next(context)
        except NotFoundError:
            lazy = front.mode == "lazy"
            refusal = await front.engine.refusal(front.calling_client(), front.tool_set, name, lazy=lazy, unknown=True)
            return ToolResult(content=refusal, is_error=True)
