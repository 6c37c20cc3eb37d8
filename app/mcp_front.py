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
from typing import Any, Literal

import jsonschema
from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from pydantic import PrivateAttr

from app.catalog import SEARCH_TOOL_NAME, ToolEntry, select_mcp_tools
from app.config import Config
from app.discovery.manifest import search_tool_definition
from app.discovery.search import Discovery, run_search
from app.mcp.connections import McpManager
from app.request_tools import mcp_groups

Mode = Literal["lazy", "proxy", "full"]
DEFERRED_TAG = "toolsift-deferred"
CALL_TOOL_NAME = "call_tool"
ENABLED_STATE = "toolsift_enabled"  # the tools a session's searches enabled


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
        return ToolResult(content=f"Error: {exc}", is_error=True)
    return ToolResult(
        content=list(result.content) or "(the tool returned no content)",
        structured_content=result.structured_content,
        is_error=bool(result.is_error),
    )


class LazySearch(Tool):
    """`search_tools` in lazy mode: found tools are enabled for the calling session."""

    _discovery: Discovery = PrivateAttr()
    _limit: int = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        context = get_context()
        enabled = set(await context.get_state(ENABLED_STATE) or [])
        outcome = run_search(arguments, self._discovery, lambda name: name in enabled, self._limit)
        names = {entry.name for entry in outcome.found}
        if names:
            await context.set_state(ENABLED_STATE, sorted(enabled | names))
            await context.enable_components(names=names)
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


class NotYetEnabled(Middleware):
    """A deferred tool called before `search_tools` enabled it gets guidance, not a bare 'unknown tool'."""

    def __init__(self, deferred: set[str], discovery: Discovery | None) -> None:
        self.deferred = deferred
        self.discovery = discovery

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except NotFoundError:
            name = context.message.name
            if name in self.deferred:
                text = f"Error: Tool '{name}' is not enabled yet. Call search_tools with tool_names [\"{name}\"] first."
            else:
                hint = (
                    run_search({"tool_names": [name]}, self.discovery, lambda _: False, 3).text
                    if self.discovery
                    else ""
                )
                text = f"Error: Unknown tool '{name}'. {hint}".strip()
            return ToolResult(content=text, is_error=True)


def build_front(manager: McpManager, config: Config, mode: Mode, tool_set: str | None = None) -> FastMCP:
    front = new_front()
    populate(front, manager, config, mode, tool_set)
    return front


def new_front(auth: Any = None) -> FastMCP:
    return FastMCP(
        "toolsift",
        instructions="One MCP server for many: search_tools finds and enables the tools you need.",
        auth=auth,
    )


def populate(
    front: FastMCP, manager: McpManager, config: Config, mode: Mode, tool_set: str | None = None, note: str = ""
) -> None:
    """Add the tools of `mode` to `front`, from the catalog as it is now; `note` is added to search_tools."""
    entries = select_mcp_tools(manager.catalog, config, tool_set)
    deferred = [entry for entry in entries if entry.deferred]
    loaded = [entry for entry in entries if not entry.deferred]
    discovery = (
        Discovery.build(mcp_groups(manager.catalog, deferred), config.tool_discovery.manifest_max_tokens)
        if deferred
        else None
    )
    limit = config.tool_discovery.max_search_results
    if mode == "full" or discovery is None:
        for entry in entries:
            front.add_tool(_forwarded(entry, manager))
        return
    search = discovery.definition["function"]
    if mode == "lazy":
        for entry in entries:
            front.add_tool(_forwarded(entry, manager, tags={DEFERRED_TAG} if entry.deferred else None))
        front.disable(tags={DEFERRED_TAG})
        lazy = LazySearch(name=SEARCH_TOOL_NAME, description=search["description"], parameters=search["parameters"])
        lazy._discovery, lazy._limit = discovery, limit
        front.add_tool(lazy)
        front.add_middleware(NotYetEnabled({entry.name for entry in deferred}, discovery))
        return
    for entry in loaded:
        front.add_tool(_forwarded(entry, manager))
    proxy_description = search_tool_definition(list(discovery.groups), discovery.manifest)["function"]["description"]
    proxy_description = proxy_description.replace(
        "found tools become callable right after, as server__tool", "then run them with call_tool, named server__tool"
    )
    if note:
        proxy_description = proxy_description.replace("\n\n<manifest>", f" {note}\n\n<manifest>", 1)
    proxy_search = ProxySearch(name=SEARCH_TOOL_NAME, description=proxy_description, parameters=search["parameters"])
    proxy_search._discovery, proxy_search._limit = discovery, limit
    front.add_tool(proxy_search)
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
    front.add_tool(call)


def _forwarded(entry: ToolEntry, manager: McpManager, tags: set[str] | None = None) -> ForwardedTool:
    tool = ForwardedTool(
        name=entry.name, description=entry.description, parameters=entry.parameters, tags=tags or set()
    )
    tool._entry, tool._manager = entry, manager
    return tool
