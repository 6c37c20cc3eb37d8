"""The engine's side of the MCP front: the tools a scope serves, a client's search and its tool calls.

A search and a call here are the chat's own (`RequestTools`): the same ranking, budgets and texts, and the same
refusal of a tool outside the caller's scope or not yet enabled, whichever front asked. What a client enabled is
kept here too (app/engine/mcp_clients.py), so the MCP front never touches the store or the MCP client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from app.common import tracing
from app.common.identity import Identity
from app.common.offload import off_loop
from app.common.redaction import redact
from app.common.schema_check import first_error
from app.core.catalog import SEARCH_TOOL_NAME, ToolEntry, ToolScope, select_mcp_tools
from app.core.model import JsonObject
from app.discovery.manifest import search_tool_definition
from app.engine.gateway import Gateway
from app.engine.learning_trail import Trail
from app.engine.mcp_clients import Client, ClientView
from app.engine.request_tools import RequestTools, ToolKind
from app.engine.spans import search_attributes, searched

Mode = Literal["lazy", "proxy", "full"]
PROXY_CALLABLE_AFTER = "then run them with call_tool, named server__tool"


@dataclass(frozen=True)
class Listing:
    """What a scope serves for one catalog version: its tools, those hidden until found (lazy mode's), and
    `search_tools`' description and parameters when anything is deferred."""

    version: int
    entries: list[ToolEntry]
    deferred: frozenset[str]
    search: JsonObject | None


@dataclass(frozen=True)
class Searched:
    """A `search_tools` answer: its text, the tools it found (proxy mode answers their schemas), and whether it
    enabled new tools for the client (lazy mode: the client is told its list changed)."""

    text: str
    found: list[ToolEntry]
    enabled: bool = False


@dataclass(frozen=True)
class ToolOutcome:
    """A tool call's result as the MCP front passes it on: the backend's content blocks, or the refusal text."""

    content: str | list[Any]
    structured: JsonObject | None = None
    is_error: bool = False


class McpServing:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def listing(self, scope: ToolScope, mode: Mode, note: str = "") -> Listing:
        """Raises RequestRefused for a tool set naming tools its servers do not list."""
        gateway = self.gateway
        catalog = gateway.mcp.catalog
        entries = select_mcp_tools(catalog, gateway.config, scope)
        discovery = gateway.discovery.get(catalog, scope, entries)
        if mode == "full" or discovery is None:
            return Listing(catalog.version, entries, frozenset(), None)
        if mode == "lazy":
            deferred = frozenset(entry.name for entry in entries if entry.deferred)
            return Listing(catalog.version, entries, deferred, discovery.definition["function"])
        definition = search_tool_definition(discovery.groups, discovery.manifest, PROXY_CALLABLE_AFTER, note)
        return Listing(catalog.version, entries, frozenset(), definition["function"])

    def tools(self, scope: ToolScope, enabled: list[str] | None, proxy: bool = False) -> RequestTools:
        """The scope's tools as a chat request's: loaded ones and what the client `enabled`; with None, every
        tool of the scope may be called (proxy and full modes)."""
        gateway = self.gateway
        catalog = gateway.mcp.catalog
        entries = select_mcp_tools(catalog, gateway.config, scope)
        settings = gateway.config.tool_discovery
        tools = RequestTools(
            entries,
            gateway.discovery.get(catalog, scope, entries),
            settings.max_search_results,
            settings.load_related,
            gateway.config.max_queries_per_search,
            proxy=proxy,
        )
        if enabled is None:
            tools.pin(tools.entries)
        else:
            tools.load(enabled)
        return tools

    async def search(self, client: Client, scope: ToolScope, arguments: Mapping[str, Any], proxy: bool) -> Searched:
        """One `search_tools` call (several queries in one): in lazy mode what it finds is enabled for `client`."""
        view = None if proxy else await self.gateway.mcp_clients.get(client)
        tools = self.tools(scope, None if view is None else view.enabled, proxy)
        if tools.discovery is None:
            return Searched("Error: nothing is deferred here, so there is nothing to search.", [])
        tools.trail = self._trail(client)
        with tracing.span(f"execute_tool {SEARCH_TOOL_NAME}", search_attributes()) as span:
            keyword_only = await tools.prepare_search(arguments)
            outcome = await off_loop(tools.search, dict(arguments))
            searched(span, outcome)
        await tools.trail.finish()  # what it returned waits for the client's call
        text = f"{outcome.text}\n\n{keyword_only}" if keyword_only else outcome.text
        if view is None or not tools.found_by_search:
            return Searched(text, outcome.found)
        found = tools.discovered

        def enable(current: ClientView) -> bool:
            current.enabled = list(dict.fromkeys([*current.enabled, *found]))
            return True

        await self.gateway.mcp_clients.update(client, enable)
        return Searched(text, outcome.found, enabled=True)

    async def refusal(
        self, client: Client, scope: ToolScope, name: str, lazy: bool, unknown: bool = False
    ) -> str | None:
        """Why `client` may not call `name`, in the chat's words: not in its scope (or `unknown` to the front), or,
        `lazy`, deferred and not enabled; None when it may. The text lists the tools the client has loaded."""
        allowed = await self._allowed(client, scope, name, lazy, unknown)
        return allowed if isinstance(allowed, str) else None

    async def _allowed(
        self, client: Client, scope: ToolScope, name: str, lazy: bool, unknown: bool = False
    ) -> ToolEntry | str:
        """The tool `client` may call by `name`, or the refusal it reads instead."""
        enabled = (await self.gateway.mcp_clients.get(client)).enabled if lazy else None
        tools = self.tools(scope, enabled)
        if not unknown and tools.kind(name) is ToolKind.MCP:
            return tools.entries[name]
        if enabled is None:  # the refusal lists what the client has loaded: its enabled tools too
            tools = self.tools(scope, (await self.gateway.mcp_clients.get(client)).enabled)
        kind = tools.kind(name)
        return tools.refusal(name, kind if kind is ToolKind.NOT_LOADED and lazy and not unknown else ToolKind.UNKNOWN)

    async def call(
        self, client: Client, scope: ToolScope, name: str, arguments: Any, lazy: bool, checked: bool
    ) -> ToolOutcome:
        """Run tool `name` for `client`, refused as a chat's model would be; `checked`: validate the arguments
        against the tool's schema first (proxy's `call_tool`, whose arguments no client library checked)."""
        entry = await self._allowed(client, scope, name, lazy)
        if isinstance(entry, str):
            return ToolOutcome(entry, is_error=True)
        if not isinstance(arguments, dict):
            return ToolOutcome("Error: 'arguments' must be an object.", is_error=True)
        if checked:  # sized by the caller's arguments: checked in the worker pool
            error = await off_loop(first_error, arguments, entry.parameters)
            if error is not None:
                where = "/".join(str(part) for part in error.absolute_path) or "arguments"
                message = f"Error: invalid arguments for {entry.name} at {where}: {error.message}. Nothing was run."
                return ToolOutcome(message, is_error=True)
        outcome = await self.run(entry, arguments, client[0])
        if entry.deferred:  # learned when a search of this client returned it
            trail = self._trail(client)
            trail.called(entry.name, not outcome.is_error)
            await trail.finish()
        return outcome

    def _trail(self, client: Client) -> Trail:
        """An MCP client's learning signal: its searches and calls are separate requests, tied by its id."""
        return Trail(self.gateway.learning, client[0].id, client[1])

    async def run(self, entry: ToolEntry, arguments: dict[str, Any], caller: Identity) -> ToolOutcome:
        assert entry.server is not None
        try:
            result = await self.gateway.mcp.call_raw(entry.server, entry.original_name, arguments, caller)
        except Exception as exc:
            return ToolOutcome(redact(f"Error: {exc}"), is_error=True)
        content = list(result.content) or "(the tool returned no content)"
        return ToolOutcome(content, result.structured_content, bool(result.is_error))
