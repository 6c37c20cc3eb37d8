"""The MCP front's tools: backend tools forwarded under their gateway names, `search_tools` (lazy: enables what it
finds for the calling client; proxy: answers full schemas) and proxy's `call_tool`.

Each tool gets what it needs through its constructor. The texts a client reads when it calls a tool it has not
enabled, or one that does not exist, are the engine's (`RequestTools.refusal`), the same a chat's model reads.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import mcp_types
from fastmcp.server.dependencies import get_context
from fastmcp.tools.base import Tool, ToolResult
from pydantic import PrivateAttr

from app.common import tracing
from app.common.identity import Identity
from app.common.offload import off_loop
from app.common.redaction import redact
from app.common.schema_check import first_error
from app.core.catalog import SEARCH_TOOL_NAME, ToolEntry
from app.discovery.encode_budget import EncodeBudget
from app.discovery.queries import QueryBudget
from app.discovery.search import Discovery, prepare_search, run_search
from app.engine.request_tools import RequestTools, ToolKind
from app.engine.spans import search_attributes, searched
from app.mcp.client.connections import McpManager

CALL_TOOL_NAME = "call_tool"
PROXY_NOTE = "These tools are callable through call_tool."
PROXY_CALLABLE_AFTER = "then run them with call_tool, named server__tool"


Caller = Callable[[], Identity]  # the calling client's identity, for servers that act as each caller


class ForwardedTool(Tool):
    """A backend MCP tool, exposed under its gateway name and run on its own server."""

    _entry: ToolEntry = PrivateAttr()
    _manager: McpManager = PrivateAttr()
    _caller: Caller = PrivateAttr()

    def __init__(self, entry: ToolEntry, manager: McpManager, caller: Caller) -> None:
        super().__init__(name=entry.name, description=entry.description, parameters=entry.parameters)
        self._entry, self._manager, self._caller = entry, manager, caller

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return await forward(self._manager, self._entry, arguments, self._caller())


async def forward(manager: McpManager, entry: ToolEntry, arguments: dict[str, Any], caller: Identity) -> ToolResult:
    assert entry.server is not None
    try:
        result = await manager.call_raw(entry.server, entry.original_name, arguments, caller)
    except Exception as exc:
        return ToolResult(content=redact(f"Error: {exc}"), is_error=True)
    return ToolResult(
        content=list(result.content) or "(the tool returned no content)",
        structured_content=result.structured_content,
        is_error=bool(result.is_error),
    )


ClientTools = Callable[[], Awaitable[RequestTools]]  # the calling client's loaded tools, its enabled ones included
Enable = Callable[[list[str]], Awaitable[None]]  # keep what a search loaded for the calling client


class LazySearch(Tool):
    """`search_tools` in lazy mode: the engine's search over the client's tools; what it loads is enabled for
    the calling client, which is told its tool list changed."""

    _tools: ClientTools = PrivateAttr()
    _enable: Enable = PrivateAttr()

    def __init__(self, definition: dict[str, Any], tools: ClientTools, enable: Enable) -> None:
        super().__init__(
            name=SEARCH_TOOL_NAME, description=definition["description"], parameters=definition["parameters"]
        )
        self._tools, self._enable = tools, enable

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        tools = await self._tools()
        with tracing.span(f"execute_tool {SEARCH_TOOL_NAME}", search_attributes()) as span:
            keyword_only = await tools.prepare_search(arguments)
            outcome = await off_loop(tools.search, arguments)
            searched(span, outcome)
        if tools.found_by_search:
            await self._enable(tools.discovered)
            await get_context().send_notification(mcp_types.ToolListChangedNotification())
        return ToolResult(content=f"{outcome.text}\n\n{keyword_only}" if keyword_only else outcome.text)


def _nothing_loaded(name: str) -> bool:
    return False


class ProxySearch(Tool):
    """`search_tools` in proxy mode: found tools with their full input schemas, to call through `call_tool`."""

    _discovery: Discovery = PrivateAttr()
    _limit: int = PrivateAttr()
    _budget: QueryBudget = PrivateAttr()

    def __init__(
        self, description: str, parameters: dict[str, Any], discovery: Discovery, limit: int, max_queries: int
    ) -> None:
        super().__init__(name=SEARCH_TOOL_NAME, description=description, parameters=parameters)
        self._discovery, self._limit, self._budget = discovery, limit, QueryBudget(max_queries)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        semantic = self._discovery.semantic
        encoding = EncodeBudget(semantic.settings.query_tokens_per_request) if semantic is not None else None
        with tracing.span(f"execute_tool {SEARCH_TOOL_NAME}", search_attributes()) as span:
            keyword_only = await prepare_search(self._discovery, arguments, self._budget, encoding)
            outcome = await off_loop(
                run_search,
                arguments,
                self._discovery,
                _nothing_loaded,
                self._limit,
                loaded_note=PROXY_NOTE,
                budget=self._budget,
            )
            if keyword_only:
                outcome = replace(outcome, text=f"{outcome.text}\n\n{keyword_only}")
            searched(span, outcome)
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

    _tools: RequestTools = PrivateAttr()
    _manager: McpManager = PrivateAttr()
    _caller: Caller = PrivateAttr()

    def __init__(self, tools: RequestTools, manager: McpManager, caller: Caller) -> None:
        super().__init__(
            name=CALL_TOOL_NAME,
            description="Run a tool found with search_tools: its name and its arguments, checked against its schema.",
            parameters={
                "type": "object",
                "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                "required": ["name"],
            },
        )
        self._tools, self._manager, self._caller = tools, manager, caller

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        name = arguments.get("name")
        entry = self._tools.entries.get(name) if isinstance(name, str) else None
        if entry is None or entry.server is None:
            return ToolResult(content=self._tools.refusal(str(name), ToolKind.UNKNOWN), is_error=True)
        tool_arguments = arguments.get("arguments") or {}
        if not isinstance(tool_arguments, dict):
            return ToolResult(content="Error: 'arguments' must be an object.", is_error=True)
        # Sized by the caller's arguments: checked in the worker pool. A broken schema is the backend's to enforce.
        error = await off_loop(first_error, tool_arguments, entry.parameters)
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "arguments"
            return ToolResult(
                content=f"Error: invalid arguments for {entry.name} at {where}: {error.message}. Nothing was run.",
                is_error=True,
            )
        return await forward(self._manager, entry, tool_arguments, self._caller())
