"""The MCP front's tools: backend tools forwarded under their gateway names, `search_tools` (lazy: enables what it
finds for the calling client; proxy: answers full schemas) and proxy's `call_tool`.

Each is a thin shape over one engine verb (`Engine.search`, `Engine.call_tool`): the search, the refusal of a tool
the caller may not call, and the call itself are the engine's, the same a chat's model gets.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types
from fastmcp.server.dependencies import get_context
from fastmcp.tools.base import Tool, ToolResult
from pydantic import PrivateAttr

from app.core.catalog import SEARCH_TOOL_NAME, ToolEntry, ToolScope
from app.core.model import JsonObject
from app.engine.api import Client, Engine, ToolOutcome

CALL_TOOL_NAME = "call_tool"
Calling = Callable[[], Client]  # the calling client: its identity (servers may act as each caller) and its id


def result(outcome: ToolOutcome) -> ToolResult:
    return ToolResult(content=outcome.content, structured_content=outcome.structured, is_error=outcome.is_error)


class ForwardedTool(Tool):
    """A backend MCP tool, exposed under its gateway name and run on its own server through the engine."""

    _engine: Engine = PrivateAttr()
    _scope: ToolScope = PrivateAttr()
    _calling: Calling = PrivateAttr()

    def __init__(self, entry: ToolEntry, engine: Engine, scope: ToolScope, calling: Calling) -> None:
        super().__init__(name=entry.name, description=entry.description, parameters=entry.parameters)
        self._engine, self._scope, self._calling = engine, scope, calling

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Run through the engine's call, as `call_tool` does (the front has refused a deferred tool the client
        has not enabled before this runs)."""
        outcome = await self._engine.call_tool(self._calling(), self._scope, self.name, arguments, lazy=False)
        return result(outcome)


class SearchTool(Tool):
    """`search_tools`: lazy mode enables what it finds for the calling client, which is told its tool list
    changed; proxy mode answers the found tools with their full input schemas, to call through `call_tool`."""

    _engine: Engine = PrivateAttr()
    _scope: ToolScope = PrivateAttr()
    _calling: Calling = PrivateAttr()
    _proxy: bool = PrivateAttr()

    def __init__(self, definition: JsonObject, engine: Engine, scope: ToolScope, calling: Calling, proxy: bool) -> None:
        super().__init__(
            name=SEARCH_TOOL_NAME, description=definition["description"], parameters=definition["parameters"]
        )
        self._engine, self._scope, self._calling, self._proxy = engine, scope, calling, proxy

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        searched = await self._engine.search(self._calling(), self._scope, arguments, self._proxy)
        if searched.enabled:
            await get_context().send_notification(mcp_types.ToolListChangedNotification())
        if not self._proxy or not searched.found:
            return ToolResult(content=searched.text)
        found = [
            {"name": entry.name, "description": entry.description, "input_schema": entry.parameters}
            for entry in searched.found
        ]
        return ToolResult(
            content=f"{searched.text}\n\n{json.dumps(found, ensure_ascii=False)}", structured_content={"tools": found}
        )


class ProxyCall(Tool):
    """`call_tool(name, arguments)`: the arguments checked against the tool's schema, then the tool run."""

    _engine: Engine = PrivateAttr()
    _scope: ToolScope = PrivateAttr()
    _calling: Calling = PrivateAttr()

    def __init__(self, engine: Engine, scope: ToolScope, calling: Calling) -> None:
        super().__init__(
            name=CALL_TOOL_NAME,
            description="Run a tool found with search_tools: its name and its arguments, checked against its schema.",
            parameters={
                "type": "object",
                "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                "required": ["name"],
            },
        )
        self._engine, self._scope, self._calling = engine, scope, calling

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        name = arguments.get("name")
        tool_arguments = arguments.get("arguments") or {}
        outcome = await self._engine.call_tool(
            self._calling(), self._scope, str(name), tool_arguments, lazy=False, checked=True
        )
        return result(outcome)
