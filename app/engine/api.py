"""The engine's one door: everything a front, the MCP front and the server edge may ask of the engine.

Every way in comes here: a chat on any front, an MCP client's listing, search and tool call, a `run_task`, the
stored conversations, the console's views. So who calls, what it may see (its tool scope), its limits, spans,
metrics, redaction and the recent-request records are applied behind this door, once. Like vLLM's
`EngineClient`, it is narrow on purpose: a front holds an `Engine`, never the gateway's parts, and the types it
needs come from here (or from the event and answer modules).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from app.common.errors import GatewayError
from app.common.identity import ANONYMOUS, Identities, Identity
from app.config import Config
from app.core.catalog import Catalog, ToolScope, narrowed, select_mcp_tools, unknown_tool_set
from app.core.model import ChatRequest
from app.discovery.search import Discovery
from app.engine import request_log
from app.engine.access import tool_scope
from app.engine.admission import Admission
from app.engine.caller import Caller
from app.engine.discovery_views import every_discovery, model_discovery
from app.engine.events import Event
from app.engine.explained_search import explained_search
from app.engine.gateway import Gateway
from app.engine.loop import CallPolicy
from app.engine.mcp_clients import Client, ClientView
from app.engine.mcp_serving import Listing, McpServing, Mode, Searched, ToolOutcome
from app.engine.record import RequestRecord
from app.engine.responses_store import UNAVAILABLE, ResponseStore, StoredResponse
from app.engine.task_runner import TaskReport

__all__ = [
    "UNAVAILABLE",
    "Admission",
    "Caller",
    "ChatRun",
    "Client",
    "ClientView",
    "Engine",
    "Listing",
    "Mode",
    "ResponseStore",
    "Searched",
    "StoredResponse",
    "TaskReport",
    "ToolOutcome",
]


@dataclass
class ChatRun:
    """A chat as it runs: its events, for the front to render, and the record they leave as they are read, for
    the request's log line (`Engine.finished`)."""

    events: AsyncGenerator[Event, None]
    record: RequestRecord


class Engine:
    """The narrow API over one gateway. It holds no state of its own: any number of them may share a gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._serving = McpServing(gateway)
        # What the edge reads of the configuration: attributes, not calls, on every request's path.
        self.config: Config = gateway.config
        self.identities: Identities = gateway.identities

    # The gateway's life.

    @property
    def started(self) -> bool:
        return self._gateway.started

    async def start(self) -> None:
        await self._gateway.start()

    async def stop(self) -> None:
        await self._gateway.stop()

    # A chat, whatever its front.

    def chat(
        self, request: ChatRequest, caller: Caller, *, policy: CallPolicy | None = None, max_rounds: int | None = None
    ) -> ChatRun:
        """The request's events, routed, its tools built and run as they are read (`Gateway.run`)."""
        record = RequestRecord()
        return ChatRun(record.observe(self._gateway.run(request, caller, policy=policy, max_rounds=max_rounds)), record)

    async def admit(self, identity: Identity, *, hold: bool = True, spends: bool = True) -> Admission:
        """Count a request that is not a chat (a token count, a model look-up, an MCP request) against the
        caller's limits; release the admission when it is done. Raises the 429 when a limit is reached."""
        return await self._gateway.limits.admit(identity, hold=hold, spends=spends)

    def finished(
        self, request_id: str, status: int, total_ms: float, facts: dict[str, Any], record: RequestRecord | None
    ) -> None:
        """A request is answered: its log line, metrics and place among the recent requests (`record` is None
        for one refused before it reached the engine)."""
        gateway = self._gateway
        record = record if record is not None else RequestRecord()
        request_log.account(gateway.metrics, gateway.recent, request_id, status, total_ms, facts, record)

    # Stored conversations (the Responses API's).

    @property
    def responses(self) -> ResponseStore:
        return self._gateway.responses

    # Tools: what a caller may see, search and call (the MCP front, the console, the CLI).

    @property
    def catalog(self) -> Catalog:
        return self._gateway.mcp.catalog

    def on_catalog_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` each time the catalog changes (a server came up or listed new tools)."""
        self._gateway.mcp.listeners.append(listener)

    def scope(self, identity: Identity, tool_set: str | None) -> ToolScope:
        """The tools `identity` may see when it asks for `tool_set`: an unknown tool set is a 400, one that shares
        nothing with the identity's own a 403 (GatewayError)."""
        config = self.config
        if tool_set is not None and tool_set not in config.tool_sets:
            raise unknown_tool_set(tool_set, config).as_gateway_error()
        return tool_scope(identity, tool_set, self.catalog, config)

    def scopes(self) -> list[ToolScope]:
        """Every scope a caller can be served: per tool set, and per (identity's tool set, asked tool set) pair an
        identity can make, so what a caller is served never depends on which it asked for, only on what it may
        see."""
        config = self.config
        owns = [None, *dict.fromkeys(identity.tool_set for identity in self.identities.named() if identity.tool_set)]
        return list(dict.fromkeys(narrowed(own, asked) for own in owns for asked in [None, *config.tool_sets]))

    def listing(self, scope: ToolScope, mode: Mode, note: str = "") -> Listing:
        return self._serving.listing(scope, mode, note)

    async def search(self, client: Client, scope: ToolScope, arguments: Mapping[str, Any], proxy: bool) -> Searched:
        return await self._serving.search(client, scope, arguments, proxy)

    async def call_tool(
        self, client: Client, scope: ToolScope, name: str, arguments: Any, *, lazy: bool, checked: bool = False
    ) -> ToolOutcome:
        return await self._serving.call(client, scope, name, arguments, lazy, checked)

    async def refusal(
        self, client: Client, scope: ToolScope, name: str, *, lazy: bool, unknown: bool = False
    ) -> str | None:
        return await self._serving.refusal(client, scope, name, lazy, unknown)

    async def client_view(self, client: Client) -> ClientView:
        return await self._gateway.mcp_clients.get(client)

    async def update_client(self, client: Client, change: Callable[[ClientView], bool]) -> ClientView:
        return await self._gateway.mcp_clients.update(client, change)

    @property
    def runs_tasks(self) -> bool:
        return self._gateway.tasks is not None

    async def run_task(
        self,
        task: str,
        served: ToolScope,
        asked: str | None,
        caller: Identity,
        progress: Callable[[Event], Awaitable[None]] | None = None,
    ) -> TaskReport:
        """A whole task run by the gateway's own model, within the tool set this connection serves (`asked` may
        narrow it, never widen it). Raises GatewayError when `asked` is not within it."""
        assert self._gateway.tasks is not None
        problem = _narrowing_problem(self.catalog, self.config, served, asked)
        if problem:
            raise GatewayError(400, problem, code="tool_set_not_allowed")
        # The served scope's last name is what this connection asked for; the engine narrows it to the caller's own.
        own = served[-1] if isinstance(served, tuple) else served
        return await self._gateway.tasks.run(task, asked or own, progress, Caller(caller, admitted=True))

    # The operator's views: health, metrics, recent requests, discovery as the model sees it.

    def health(self) -> dict[str, dict[str, Any]]:
        return self._gateway.mcp.health()

    def search_status(self) -> dict[str, Any]:
        """Search by meaning's state, what search learned, and the enrichment's runs (when configured)."""
        gateway = self._gateway
        status: dict[str, Any] = {**gateway.semantic.status(), "learning": gateway.learning.status()}
        if gateway.enricher is not None:
            status["enrichment"] = gateway.enricher.status()
        return status

    @property
    def metrics_registry(self) -> CollectorRegistry:
        return self._gateway.metrics.registry

    def recent_requests(self, limit: int | None = None) -> list[dict[str, Any]]:
        return self._gateway.recent.latest(limit)

    def discovery(self, tool_set: str | None) -> Discovery | None:
        """The search a model gets for `tool_set` (None: nothing is deferred)."""
        gateway = self._gateway
        return model_discovery(gateway.mcp.catalog, gateway.config, tool_set, gateway.discovery)

    async def explain_search(
        self, tool_set: str | None, queries: list[str], server: str | None, limit: int, identity: str | None = None
    ) -> dict[str, Any]:
        """The model's search for `queries` over `tool_set`, explained (RequestRefused for an unknown server), with
        what the deployment learned as `identity` reads it (by default, a caller without a key)."""
        most = self.config.max_queries_per_search
        learned = await self._gateway.learning.view(identity or ANONYMOUS.id)
        return await explained_search(
            self.discovery(tool_set), self.every_discovery(tool_set), queries, server, limit, most, learned
        )

    async def learned_pairs(self, tool: str | None = None, identity: str | None = None) -> list[dict[str, Any]]:
        """The kept (query, tool) pairs, most recently used first: all, one tool's, one identity's."""
        pairs = await self._gateway.learning.listed(tool, identity)
        return [
            {"query": pair.query, "tool": pair.tool, "identity": pair.identity, "uses": pair.uses,
             "last_used": _iso(pair.last_used)}
            for pair in pairs
        ]  # fmt: skip

    async def forget(self, tool: str | None = None, identity: str | None = None) -> int:
        """Clear kept pairs (all, one tool's, one identity's, or both): how many went."""
        return await self._gateway.learning.clear(tool, identity)

    def every_discovery(self, tool_set: str | None) -> Discovery | None:
        """A search over every tool of `tool_set`, deferred or not (the console's and the CLI's)."""
        gateway = self._gateway
        return every_discovery(gateway.mcp.catalog, gateway.config, tool_set, gateway.every)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _narrowing_problem(catalog: Catalog, config: Config, served: ToolScope, asked: str | None) -> str | None:
    """None when `asked` (a run_task tool_set) is within the tool set this connection serves."""
    if asked is None or asked == served:
        return None
    if asked not in config.tool_sets:
        return f"Unknown tool_set {asked!r}. Tool sets: {', '.join(sorted(config.tool_sets)) or 'none'}."
    if served is not None:
        allowed = {entry.name for entry in select_mcp_tools(catalog, config, served)}
        if any(entry.name not in allowed for entry in select_mcp_tools(catalog, config, asked)):
            return f"tool_set {asked!r} has tools outside this connection's tool set {served!r}."
    return None
