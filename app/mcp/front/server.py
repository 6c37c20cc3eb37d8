"""toolsift as one MCP server for MCP clients (Claude Desktop, Cursor, Claude Code, VS Code).

Every configured server's tools under the same `{server}__{tool}` names, toolsets and search index as the HTTP
API, exposed three ways:

- `lazy`: `tools/list` shows the loaded tools and `search_tools`; a search enables the found tools for this
  client and the client gets `notifications/tools/list_changed`. A client is a caller's identity in one MCP
  session (handshake-era protocols), or the identity alone (2026-07-28, which has no sessions); what it enabled
  is kept in one place that `search_tools`, `tools/list` and `tools/call` all read, so they never disagree.
- `proxy`: fixed meta-tools for clients that ignore `list_changed`: `search_tools` answers full schemas and
  `call_tool(name, arguments)` validates the arguments and runs the tool.
- `full`: a transparent aggregate of every tool.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema
import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.server.dependencies import get_context, get_http_request
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import PrivateAttr

from app import toolsift_version
from app.config import Config, ToolDiscoveryConfig
from app.core.catalog import SEARCH_TOOL_NAME, ToolEntry, select_mcp_tools
from app.discovery.manifest import search_tool_definition
from app.discovery.related import with_related
from app.discovery.search import Discovery, prepare_query, run_search, shown_name
from app.discovery.semantic import SemanticSearch
from app.engine.request_tools import mcp_groups
from app.engine.tasks import TaskRunner
from app.identity import ANONYMOUS, identity_of
from app.mcp.client.connections import McpManager
from app.mcp.front.tasks import run_task_tool
from app.redaction import redact

Mode = Literal["lazy", "proxy", "full"]
CALL_TOOL_NAME = "call_tool"


class ForwardedTool(Tool):
    """A backend MCP tool, exposed under its gateway name and run on its own server."""

    _entry: ToolEntry = PrivateAttr()
    _manager: McpManager = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return await _forward(self._manager, self._entry, arguments)


async def _forward(manager: McpManager, entry: ToolEntry, arguments: dict[str, Any]) -> ToolResult:
    assert entry.server is not None
    try:
        result = await manager.call_raw(entry.server, entry.original_name, arguments)
    except Exception as exc:
        return ToolResult(content=redact(f"Error: {exc}"), is_error=True)
    return ToolResult(
        content=list(result.content) or "(the tool returned no content)",
        structured_content=result.structured_content,
        is_error=bool(result.is_error),
    )


class LazySearch(Tool):
    """`search_tools` in lazy mode: found tools are enabled for the calling session."""

    _discovery: Discovery = PrivateAttr()
    _limit: int = PrivateAttr()
    _related: int = PrivateAttr(default=0)
    _state: FrontState = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        enabled = self._state.client().enabled
        await prepare_query(self._discovery, arguments.get("query"))
        outcome = run_search(arguments, self._discovery, lambda name: name in enabled, self._limit)
        outcome = with_related(outcome, self._discovery, self._related, lambda name: name in enabled)
        names = {entry.name for entry in [*outcome.found, *outcome.related]}
        if names:
            enabled.update(names)
            await get_context().send_notification(mcp_types.ToolListChangedNotification())
        return ToolResult(content=outcome.text)


PROXY_NOTE = "These tools are callable through call_tool."
PROXY_CALLABLE_AFTER = "then run them with call_tool, named server__tool"


class ProxySearch(Tool):
    """`search_tools` in proxy mode: found tools with their full input schemas, to call through `call_tool`."""

    _discovery: Discovery = PrivateAttr()
    _limit: int = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        await prepare_query(self._discovery, arguments.get("query"))
        outcome = run_search(arguments, self._discovery, lambda name: False, self._limit, loaded_note=PROXY_NOTE)
        if not outcome.found:
            return ToolResult(content=outcome.text)
        found = [
            {"name": entry.name, "description": entry.description, "input_schema": entry.parameters}
            for entry in outcome.found
        ]
        return ToolResult(
            content=f"{outcome.text}\n\n{json.dumps(found, ensure_ascii=False)}", structured_content={"tools": found}
        )


class ProxyCall(Tool):
    """`call_tool(name, arguments)`: validate against the tool's schema, then run it."""

    _entries: dict[str, ToolEntry] = PrivateAttr()
    _manager: McpManager = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        name = arguments.get("name")
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            return ToolResult(
                content=f"Error: unknown tool {name!r}. Use search_tools to find tool names.", is_error=True
            )
        tool_arguments = arguments.get("arguments") or {}
        if not isinstance(tool_arguments, dict):
            return ToolResult(content="Error: 'arguments' must be an object.", is_error=True)
        try:
            jsonschema.validate(tool_arguments, entry.parameters)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(part) for part in exc.absolute_path) or "arguments"
            return ToolResult(
                content=f"Error: invalid arguments for {entry.name} at {where}: {exc.message}. Nothing was run.",
                is_error=True,
            )
        except jsonschema.SchemaError:
            pass  # a backend's broken schema is the backend's to enforce
        return await _forward(self._manager, entry, tool_arguments)


@dataclass
class ClientView:
    """One client's view of the front: the catalog version it last saw and the deferred tools it enabled."""

    seen: int | None = None
    enabled: set[str] = field(default_factory=set)


@dataclass
class FrontState:
    """What a front currently serves; replaced in place when the backends' tools change."""

    version: int = -1
    deferred: set[str] = field(default_factory=set)
    discovery: Discovery | None = None
    tool_names: list[str] = field(default_factory=list)
    max_clients: int = 10_000
    clients: OrderedDict[tuple[str, str | None], ClientView] = field(default_factory=OrderedDict)

    def client(self) -> ClientView:
        """The calling client's view; the least recently seen clients are forgotten beyond `max_clients`."""
        key = client_key()
        view = self.clients.pop(key, None) or ClientView()
        self.clients[key] = view
        while len(self.clients) > self.max_clients:
            self.clients.popitem(last=False)
        return view

    def hidden(self) -> set[str]:
        """The deferred tools this client has not enabled with a search."""
        return self.deferred - self.client().enabled if self.deferred else set()


def client_key() -> tuple[str, str | None]:
    """Who is calling, and in which MCP session: the caller's identity (from the gateway key over HTTP; over
    stdio the process has a single client) and, on handshake-era connections, the MCP session id. 2026-07-28
    connections have no session, so there the identity alone is the client."""
    try:
        identity = identity_of(get_http_request().scope)
    except RuntimeError:
        identity = ANONYMOUS
    context = get_context()
    request = context.request_context
    if request is not None and request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return identity.id, None
    try:
        return identity.id, context.session_id
    except RuntimeError:
        return identity.id, None


class FrontMiddleware(Middleware):
    """Tells a client its tool list changed (on its next request, the only channel a sessionless protocol
    has), hides the deferred tools a client has not enabled, and gives guidance when one is called."""

    def __init__(self, state: FrontState) -> None:
        self.state = state

    async def on_request(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        session = context.fastmcp_context
        if session is not None and context.method != "initialize":
            view = self.state.client()
            if view.seen != self.state.version:
                if view.seen is not None:
                    await session.send_notification(mcp_types.ToolListChangedNotification())
                view.seen = self.state.version
        return await call_next(context)

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        tools = await call_next(context)
        hidden = self.state.hidden()
        return [tool for tool in tools if tool.name not in hidden] if hidden else tools

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        name = context.message.name
        if name in self.state.deferred and name not in self.state.client().enabled:
            text = f"Error: Tool '{name}' is not enabled yet. Call search_tools with tool_names [\"{name}\"] first."
            return ToolResult(content=text, is_error=True)
        try:
            return await call_next(context)
        except NotFoundError:
            discovery = self.state.discovery
            hint = run_search({"tool_names": [name]}, discovery, lambda _: False, 3).text if discovery else ""
            text = f"Error: Unknown tool '{shown_name(name)}'. {hint}".strip()  # a client's name is anything
            return ToolResult(content=text, is_error=True)


class Front:
    """One MCP server over the catalog: its tools follow the backends, its sessions are told when they change."""

    def __init__(self, auth: Any = None, max_clients: int = 10_000) -> None:
        self.state = FrontState(max_clients=max_clients)
        self.server = FastMCP(
            "toolsift",
            version=toolsift_version(),  # else fastmcp's own version is what clients see in serverInfo
            instructions="One MCP server for many: search_tools finds and enables the tools you need.",
            auth=auth,
        )
        self.server.add_middleware(FrontMiddleware(self.state))
        self.semantic: SemanticSearch | None = None  # hybrid search, when the process runs one
        self.tasks: TaskRunner | None = None  # run_task, when configured

    def populate(
        self, manager: McpManager, config: Config, mode: Mode, tool_set: str | None = None, note: str = ""
    ) -> None:
        """Serve the tools of `mode` from the catalog as it is now; `note` is added to proxy's search_tools."""
        entries = select_mcp_tools(manager.catalog, config, tool_set)
        deferred = [entry for entry in entries if entry.deferred]
        discovery = (
            Discovery.build(
                mcp_groups(manager.catalog, deferred, [entry for entry in entries if not entry.deferred]),
                config.tool_discovery.manifest_max_tokens,
                semantic=self.semantic,
            )
            if deferred
            else None
        )
        tools = _tools(entries, discovery, manager, mode, config.tool_discovery, note, self.state)
        if self.tasks is not None:
            tools.append(run_task_tool(self.tasks, config, tool_set))
        for name in self.state.tool_names:
            self.server.local_provider.remove_tool(name)
        for tool in tools:
            self.server.add_tool(tool)
        self.state.tool_names = [tool.name for tool in tools]
        self.state.deferred = {entry.name for entry in deferred} if mode == "lazy" else set()
        self.state.discovery = discovery
        self.state.version = manager.catalog.version

    def keep_in_sync(
        self, manager: McpManager, config: Config, mode: Mode, tool_set: str | None, note: str = ""
    ) -> None:
        def rebuild() -> None:
            if self.state.version != manager.catalog.version:
                self.populate(manager, config, mode, tool_set, note)

        manager.listeners.append(rebuild)


def _tools(
    entries: list[ToolEntry],
    discovery: Discovery | None,
    manager: McpManager,
    mode: Mode,
    settings: ToolDiscoveryConfig,
    note: str,
    state: FrontState,
) -> list[Tool]:
    limit = settings.max_search_results
    if mode == "full" or discovery is None:
        return [_forwarded(entry, manager) for entry in entries]
    search = discovery.definition["function"]
    if mode == "lazy":
        lazy = LazySearch(name=SEARCH_TOOL_NAME, description=search["description"], parameters=search["parameters"])
        lazy._discovery, lazy._limit, lazy._related, lazy._state = discovery, limit, settings.load_related, state
        return [*(_forwarded(entry, manager) for entry in entries), lazy]
    proxy_definition = search_tool_definition(discovery.groups, discovery.manifest, PROXY_CALLABLE_AFTER, note)
    description = proxy_definition["function"]["description"]
    proxy_search = ProxySearch(name=SEARCH_TOOL_NAME, description=description, parameters=search["parameters"])
    proxy_search._discovery, proxy_search._limit = discovery, limit
    call = ProxyCall(
        name=CALL_TOOL_NAME,
        description="Run a tool found with search_tools: its name and its arguments, checked against its schema.",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name"],
        },
    )
    call._entries, call._manager = {entry.name: entry for entry in entries}, manager
    loaded = [_forwarded(entry, manager) for entry in entries if not entry.deferred]
    return [*loaded, proxy_search, call]


def _forwarded(entry: ToolEntry, manager: McpManager) -> ForwardedTool:
    tool = ForwardedTool(name=entry.name, description=entry.description, parameters=entry.parameters)
    tool._entry, tool._manager = entry, manager
    return tool
