"""toolsift as one MCP server: every configured server's tools under the same `{server}__{tool}` names, toolsets
and search index as the HTTP API, exposed three ways:

- `lazy`: `tools/list` shows the loaded tools and `search_tools`; a search enables the found tools for this
  client and the client gets `notifications/tools/list_changed`. What a client enabled is kept in the gateway's
  store (app/fronts/mcp/clients.py), which `search_tools`, `tools/list` and `tools/call` all read, so they never
  disagree, and replicas share it.
- `proxy`: fixed meta-tools for clients that ignore `list_changed`: `search_tools` answers full schemas and
  `call_tool(name, arguments)` validates the arguments and runs the tool.
- `full`: a transparent aggregate of every tool.

The tools are served through fastmcp's provider seam (`CatalogTools`), built from the engine's catalog and
discovery once per catalog version; the loaded/deferred rules and their texts are the engine's (`RequestTools`).
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
from app.core.catalog import ToolScope, select_mcp_tools
from app.discovery.manifest import search_tool_definition
from app.discovery.search import Discovery
from app.engine.gateway import Gateway
from app.engine.request_tools import RequestTools, ToolKind
from app.fronts.mcp import handshake
from app.fronts.mcp.clients import ClientStates, ClientView, calling_client
from app.fronts.mcp.redacted_results import RedactedResults
from app.fronts.mcp.run_task import RunTask
from app.fronts.mcp.tools import PROXY_CALLABLE_AFTER, ForwardedTool, LazySearch, ProxyCall, ProxySearch

Mode = Literal["lazy", "proxy", "full"]


@dataclass
class Served:
    """What the front serves for one catalog version."""

    version: int
    tools: dict[str, Tool] = field(default_factory=dict)
    deferred: set[str] = field(default_factory=set)  # lazy mode's: hidden until a client enables them
    discovery: Discovery | None = None
    # What the tool list is made of, the same on every replica (catalog versions are per process), so a client
    # that moves between replicas is told of a change only when there was one.
    fingerprint: str = ""


class McpFront:
    """One MCP server over the gateway's catalog for one tool set: its tools follow the backends, and each
    client is told when its list changed."""

    def __init__(
        self, gateway: Gateway, mode: Mode, tool_set: ToolScope = None, note: str = "", auth: Any = None
    ) -> None:
        """`note` is added to proxy's search_tools description; `auth` verifies HTTP clients' gateway keys."""
        self.gateway = gateway
        self.mode = mode
        self.tool_set = tool_set
        self.note = note
        sessions = gateway.config.sessions
        self.clients = ClientStates(gateway.sessions.store, sessions.ttl_seconds, sessions.max_tools)
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
        self.gateway.mcp.listeners.append(self._catalog_changed)

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
        catalog = self.gateway.mcp.catalog
        if self._served.version != catalog.version:
            self._served = self._build()
        return self._served

    def client_tools(self, view: ClientView) -> RequestTools:
        """The client's tools as the engine sees a request's: loaded ones, then what it enabled."""
        tools = self._request_tools()
        tools.load(view.enabled)
        return tools

    def _request_tools(self) -> RequestTools:
        gateway = self.gateway
        entries = select_mcp_tools(gateway.mcp.catalog, gateway.config, self.tool_set)
        settings = gateway.config.tool_discovery
        return RequestTools(
            entries,
            self.served().discovery,
            settings.max_search_results,
            settings.load_related,
            gateway.config.max_queries_per_search,
        )

    def _build(self) -> Served:
        gateway, catalog = self.gateway, self.gateway.mcp.catalog
        entries = select_mcp_tools(catalog, gateway.config, self.tool_set)
        discovery = gateway.discovery.get(catalog, self.tool_set, entries)
        served = Served(catalog.version, discovery=discovery)
        self._served = served  # the tools below read the discovery through it
        tools: list[Tool]
        if self.mode == "full" or discovery is None:
            tools = [ForwardedTool(entry, gateway.mcp, self._caller) for entry in entries]
        elif self.mode == "lazy":
            search = discovery.definition["function"]
            tools = [ForwardedTool(entry, gateway.mcp, self._caller) for entry in entries]
            tools.append(LazySearch(search, self._calling_client_tools, self._enable))
            served.deferred = {entry.name for entry in entries if entry.deferred}
        else:
            definition = search_tool_definition(discovery.groups, discovery.manifest, PROXY_CALLABLE_AFTER, self.note)
            function = definition["function"]
            limit, queries = gateway.config.tool_discovery.max_search_results, gateway.config.max_queries_per_search
            tools = [ForwardedTool(entry, gateway.mcp, self._caller) for entry in entries if not entry.deferred]
            tools.append(ProxySearch(function["description"], function["parameters"], discovery, limit, queries))
            tools.append(ProxyCall(self._request_tools(), gateway.mcp, self._caller))
        if gateway.tasks is not None:
            tools.append(RunTask(gateway.tasks, gateway.config, self.tool_set, gateway.identities))
        served.tools = {tool.name: tool for tool in tools}
        listed = "\n".join(sorted(served.tools)) + "\n\n" + "\n".join(sorted(served.deferred))
        served.fingerprint = hashlib.sha256(listed.encode()).hexdigest()[:16]
        return served

    def calling_client(self) -> tuple[Identity, str]:
        return calling_client(self.tool_set, self.gateway.identities)

    def _caller(self) -> Identity:
        return self.calling_client()[0]

    async def _calling_client_tools(self) -> RequestTools:
        return self.client_tools(await self.clients.get(self.calling_client()))

    async def _enable(self, names: list[str]) -> None:
        def add(view: ClientView) -> bool:
            view.enabled = list(dict.fromkeys([*view.enabled, *names]))
            return True

        await self.clients.update(self.calling_client(), add)


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
            if (await self.front.clients.get(client)).seen != fingerprint:  # read alone: most requests stop here
                seen: list[str | None] = []

                def see(view: ClientView) -> bool:
                    seen.append(view.seen)
                    view.seen = fingerprint
                    return seen[0] != fingerprint

                await self.front.clients.update(client, see)
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
        hidden = deferred - set((await self.front.clients.get(self.front.calling_client())).enabled)
        return [tool for tool in tools if tool.name not in hidden]

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        name = context.message.name
        if name in self.front.served().deferred:
            tools = await self.front._calling_client_tools()
            if not tools.is_loaded(name):
                return ToolResult(content=tools.refusal(name, ToolKind.NOT_LOADED), is_error=True)
        try:
            return await call_next(context)
        except NotFoundError:
            tools = await self.front._calling_client_tools()
            return ToolResult(content=tools.refusal(name, ToolKind.UNKNOWN), is_error=True)
