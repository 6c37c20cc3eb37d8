"""toolsift as one MCP server for MCP clients (Claude Desktop, Cursor, Claude Code, VS Code).

Every configured server's tools under the same `{server}__{tool}` names, toolsets and search index as the HTTP
API, exposed three ways:

- `lazy`: `tools/list` shows the loaded tools and `search_tools`; a search enables the found tools for this
  session and the client gets `notifications/tools/list_changed`.
- `proxy`: fixed meta-tools for clients that ignore `list_changed`: `search_tools` answers full schemas and
  `call_tool(name, arguments)` validates the arguments and runs the tool.
- `full`: a transparent aggregate of every tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema
import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.server.dependencies import get_access_token, get_context
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from pydantic import PrivateAttr

from app.catalog import SEARCH_TOOL_NAME, ToolEntry, select_mcp_tools
from app.config import Config
from app.discovery.search import Discovery, run_search
from app.mcp.connections import McpManager
from app.redaction import redact
from app.request_tools import mcp_groups

Mode = Literal["lazy", "proxy", "full"]
DEFERRED_TAG = "toolsift-deferred"
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
    _state: FrontState = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        enabled = self._state.enabled.setdefault(client_identity(), set())
        outcome = run_search(arguments, self._discovery, lambda name: name in enabled, self._limit)
        names = {entry.name for entry in outcome.found}
        if names:
            enabled.update(names)
            await get_context().enable_components(names=names)
        return ToolResult(content=outcome.text)


class ProxySearch(Tool):
    """`search_tools` in proxy mode: found tools with their full input schemas, to call through `call_tool`."""

    _discovery: Discovery = PrivateAttr()
    _limit: int = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        outcome = run_search(arguments, self._discovery, lambda name: False, self._limit)
        if not outcome.found:
            return ToolResult(content=outcome.text)
        found = [
            {"name": entry.name, "description": entry.description, "input_schema": entry.parameters}
            for entry in outcome.found
        ]
        text = outcome.text.replace("now loaded and available to call", "callable through call_tool")
        return ToolResult(
            content=f"{text}\n\n{json.dumps(found, ensure_ascii=False)}", structured_content={"tools": found}
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
class FrontState:
    """What a front currently serves; replaced in place when the backends' tools change."""

    version: int = -1
    deferred: set[str] = field(default_factory=set)
    discovery: Discovery | None = None
    tool_names: list[str] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # client identity -> catalog version it last saw
    enabled: dict[str, set[str]] = field(default_factory=dict)  # client identity -> tools its searches enabled


def client_identity() -> str:
    """Who is calling: the authenticated client over HTTP; over stdio the process has a single client."""
    token = get_access_token()
    return token.client_id if token is not None else "local"


class FrontMiddleware(Middleware):
    """Tells a session its tool list changed (on its next request, the only channel a sessionless protocol
    has), and gives guidance when a deferred tool is called before `search_tools` enabled it."""

    def __init__(self, state: FrontState) -> None:
        self.state = state

    async def on_request(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        session = context.fastmcp_context
        if session is not None:
            client = client_identity()
            seen = self.state.seen.get(client)
            if seen != self.state.version:
                if seen is not None:
                    await session.send_notification(mcp_types.ToolListChangedNotification())
                self.state.seen[client] = self.state.version
        return await call_next(context)

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except NotFoundError:
            name = context.message.name
            if name in self.state.deferred:
                text = f"Error: Tool '{name}' is not enabled yet. Call search_tools with tool_names [\"{name}\"] first."
            else:
                discovery = self.state.discovery
                hint = run_search({"tool_names": [name]}, discovery, lambda _: False, 3).text if discovery else ""
                text = f"Error: Unknown tool '{name}'. {hint}".strip()
            return ToolResult(content=text, is_error=True)


class Front:
    """One MCP server over the catalog: its tools follow the backends, its sessions are told when they change."""

    def __init__(self, auth: Any = None) -> None:
        self.state = FrontState()
        self.server = FastMCP(
            "toolsift",
            instructions="One MCP server for many: search_tools finds and enables the tools you need.",
            auth=auth,
        )
        self.server.add_middleware(FrontMiddleware(self.state))
        self.server.disable(tags={DEFERRED_TAG})

    def populate(
        self, manager: McpManager, config: Config, mode: Mode, tool_set: str | None = None, note: str = ""
    ) -> None:
        """Serve the tools of `mode` from the catalog as it is now; `note` is added to proxy's search_tools."""
        entries = select_mcp_tools(manager.catalog, config, tool_set)
        deferred = [entry for entry in entries if entry.deferred]
        discovery = (
            Discovery.build(mcp_groups(manager.catalog, deferred), config.tool_discovery.manifest_max_tokens)
            if deferred
            else None
        )
        tools = _tools(entries, discovery, manager, mode, config.tool_discovery.max_search_results, note, self.state)
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
    limit: int,
    note: str,
    state: FrontState,
) -> list[Tool]:
    if mode == "full" or discovery is None:
        return [_forwarded(entry, manager) for entry in entries]
    search = discovery.definition["function"]
    if mode == "lazy":
        lazy = LazySearch(name=SEARCH_TOOL_NAME, description=search["description"], parameters=search["parameters"])
        lazy._discovery, lazy._limit, lazy._state = discovery, limit, state
        tagged = [_forwarded(entry, manager, {DEFERRED_TAG} if entry.deferred else None) for entry in entries]
        return [*tagged, lazy]
    description = search["description"].replace(
        "found tools become callable right after, as server__tool", "then run them with call_tool, named server__tool"
    )
    if note:
        description = description.replace("\n\n<manifest>", f" {note}\n\n<manifest>", 1)
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


def _forwarded(entry: ToolEntry, manager: McpManager, tags: set[str] | None = None) -> ForwardedTool:
    tool = ForwardedTool(
        name=entry.name, description=entry.description, parameters=entry.parameters, tags=tags or set()
    )
    tool._entry, tool._manager = entry, manager
    return tool
