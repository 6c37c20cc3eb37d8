"""The gateway: its long-lived parts (config, MCP connections, providers, caches) and `run`, the one entry every
front calls to handle a request.

`run` is the whole use case of one request: route the model, build the request's tools (with what its session
found before), run the loop, count its events, remember what it found. The server edge, the MCP front's
`run_task` and the tests all come in here, so a per-request rule (limits, budgets, audit) is written once.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from app.common import redaction, tracing
from app.common.errors import RequestRefused
from app.common.identity import Identities
from app.common.logs import guard_secrets
from app.common.offload import Lane, off_loop
from app.config import Config
from app.core.catalog import Catalog, ToolScope, select_mcp_tools
from app.core.model import ChatRequest
from app.discovery.cache import DiscoveryCache
from app.discovery.semantic import SemanticSearch
from app.engine import spans
from app.engine.access import check_model, tool_scope
from app.engine.admission import Admission, Limiter, limits_store
from app.engine.caller import Caller
from app.engine.compaction import compacts_itself, summary_request
from app.engine.enrich_background import BackgroundEnrichment, enrichment_cache
from app.engine.events import Event, Failed, Finished, Routed
from app.engine.hosted import hosted_tools
from app.engine.kept_rounds import RoundKeeper
from app.engine.learning import learning_for
from app.engine.learning_trail import Trail
from app.engine.loop import CallPolicy, ChatLoop
from app.engine.mcp_clients import ClientStates
from app.engine.metering import TokenMeter
from app.engine.metrics import Metrics
from app.engine.recent import RecentRequests
from app.engine.request_setup import tools_for
from app.engine.request_tools import RequestTools
from app.engine.responses_store import response_store
from app.engine.sessions import SessionKey, session_for, session_store
from app.engine.task_runner import TaskRunner
from app.mcp.client.connections import McpManager
from app.providers import Route, Router
from app.providers.base import Provider
from app.store import Stores


class Gateway:
    """Everything a request needs that outlives it: config, MCP connections, providers, caches."""

    def __init__(
        self, config: Config, mcp_targets: dict[str, Any] | None = None, providers: dict[str, Provider] | None = None
    ) -> None:
        """`mcp_targets` (in-memory MCP servers) and `providers` (in-memory upstreams) stand in for configured
        ones of the same name."""
        self.config = config
        self.started = False
        # A full garbage collection holds the interpreter lock while it scans every object, so a heap holding a
        # large catalog and its index stalled the event loop 300 ms at each one (and a worker thread's indexing
        # triggers them). With `freeze_heap` (a process that is this gateway), what start-up and each catalog
        # rebuild built is moved out of those scans; it is still freed when nothing refers to it.
        self.freeze_heap = False
        self._secrets = guard_secrets(config.secrets())
        self.identities = Identities(config.auth)  # who each gateway key is, and what it may reach
        self.metrics = Metrics()
        self.recent = RecentRequests(config.console.recent_requests)  # finished requests, for the console
        self.mcp = McpManager(config, mcp_targets, self.metrics.record_mcp_call, self.metrics.record_mcp_dropped)
        self.router = Router(config, providers)
        self.semantic = SemanticSearch(config.tool_discovery.semantic, config.base_dir)
        discovery = config.tool_discovery
        self.enrichments = enrichment_cache(config)  # what the configured model wrote of the tools, if any
        self.discovery = DiscoveryCache(
            discovery.manifest_max_tokens,
            self.semantic,
            client_cache_bytes=discovery.client_index_cache_mb << 20,
            enrichments=self.enrichments,
        )
        # every tool, deferred or not: the console's
        self.every = DiscoveryCache(semantic=self.semantic, everything=True, enrichments=self.enrichments)
        self.enricher = self._enricher()
        run_task = config.mcp_front.run_task
        self.tasks = TaskRunner(run_task, self.run, self.mcp) if run_task else None
        # Every store on one Redis shares a client and a circuit breaker: one client per Redis, closed at `stop`.
        self.stores = Stores(config.store.timeout_ms / 1000)
        self.sessions = session_store(config.sessions, config.store.redis_url, self.stores, self.identities)
        self.rounds = RoundKeeper(self.sessions.store, config.sessions.ttl_seconds)  # beside the sessions
        # What each MCP front client enabled, beside the sessions too.
        self.mcp_clients = ClientStates(self.sessions.store, config.sessions.ttl_seconds, config.sessions.max_tools)
        self.responses = response_store(config.responses_store, config.store.redis_url, self.stores, self.identities)
        self.limits = Limiter(
            limits_store(config.limits_redis_url(), self.stores), self.metrics, config.request_deadline + 60
        )
        self.prompt_counts = Lane(1)  # prompts counted for tokens_per_day, one at a time in the worker pool
        self.learning = learning_for(config, self.stores)  # what the deployment's successful calls taught search

    def _enricher(self) -> BackgroundEnrichment | None:
        settings = self.config.tool_discovery.enrich
        if settings is None or not settings.background or self.enrichments is None:
            return None
        return BackgroundEnrichment(
            settings,
            self.enrichments,
            lambda: self.router.route(settings.model),
            lambda: [entry for entry in self.mcp.catalog.tools.values() if entry.deferred],
            self._refresh_discovery,
            self.config.mcp_limits.rebuild_interval_seconds,
        )

    async def load_enrichments(self) -> None:
        """Read the enrichment cache (in a thread), so the first index is built with what it holds."""
        if self.enrichments is not None:
            await off_loop(self.enrichments.load)

    async def _refresh_discovery(self) -> None:
        """Index the current catalog again with the enrichments added since (the worker pool), then have their
        vectors computed."""
        catalog = self.mcp.catalog
        for cache in (self.discovery, self.every):
            await off_loop(cache.rebuild, catalog, lambda scope: select_mcp_tools(catalog, self.config, scope))
        self.semantic.track(())
        if self.freeze_heap:
            gc.freeze()

    async def start(self) -> None:
        tracing.setup()  # traces, when the OTEL_* variables ask for them (once per process)
        await self.semantic.start()  # loads the model in the background; keyword search serves meanwhile
        await self.load_enrichments()
        self.mcp.preparers.append(self._prepare_discovery)
        self.mcp.listeners.append(self._tools_changed)
        await self.mcp.start()
        self._tools_changed()
        await self.limits.check_store(self.stores, self.config.limits_redis_url())
        self.started = True

    def _prepare_discovery(self, catalog: Catalog) -> None:
        """Build the index and manifest of every toolset for a new catalog, in the worker pool before the catalog
        is published, rather than on the event loop in the first request that needs them (10,000 tools take
        seconds)."""
        for tool_set in [None, *self.config.tool_sets]:
            try:
                self.discovery.get(catalog, tool_set, select_mcp_tools(catalog, self.config, tool_set))
            except RequestRefused:  # a toolset naming tools its server no longer lists: its requests say so
                continue

    def _tools_changed(self) -> None:
        self.semantic.track(())  # the new tools were queued for embedding in the pool: start the worker
        if self.enricher is not None:
            self.enricher.wake()  # no request waits for it
        if self.freeze_heap:
            gc.freeze()

    async def stop(self) -> None:
        if self.enricher is not None:
            await self.enricher.aclose()
        await self.semantic.aclose()
        await self.mcp.stop()
        await self.router.aclose()
        await self.sessions.aclose()
        await self.responses.aclose()
        await self.limits.aclose()
        await self.stores.aclose()
        redaction.unregister(self._secrets)
        tracing.flush()

    async def run(
        self,
        request: ChatRequest,
        caller: Caller,
        *,
        policy: CallPolicy | None = None,
        max_rounds: int | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The request's events, from routing to the last round, in one pass: its model routed and its tools built
        (with what its session found before), then `Routed`, then the loop's events, the session remembered at
        the end. What makes it impossible (an unknown model, a refused session id or toolset) is raised before
        any event; what fails later is a `Failed` event. `policy` may refuse tool calls; `max_rounds` overrides the
        config's."""
        config = self.config
        trace = spans.request_trace(request, caller)
        admission = None
        try:
            check_model(caller.identity, request.model)
            scope = tool_scope(caller.identity, request.tool_set, self.mcp.catalog, config)
            if caller.upstream_key and any(provider.forward_client_auth for provider in config.providers.values()):
                redaction.add_request_secret(caller.upstream_key)  # an upstream may echo the caller's own key too
            route = self.router.route(request.model, caller.upstream_key, caller.identity.allows_model)
            trace = spans.routed(trace, config, route.provider.name)
            if request.compact and not compacts_itself(route.provider, config):
                request = summary_request(request)  # the routed model writes the summary
            hosted, dropped = hosted_tools(request, route.provider, config)
            session = session_for(caller.identity, caller.session_id, request.session_id, config.max_session_id_chars)
            spliced = await self.rounds.splice(caller.identity, request.messages)  # what it ran before, upstream
            if spliced.messages is not request.messages:
                request = replace(request, messages=spliced.messages)
            meter = self._meter(request, route, caller)
            admission = await self.limits.admit(  # 429 before any event
                caller.identity, counted=not caller.admitted, reserve=meter.estimate if meter else None
            )
            deferral, search_output = route_deferral(route.provider, config)
            tools = await self.request_tools(request, session, scope, deferral, search_output)
            tools.load(spliced.found)
            tools.trail = trail = Trail(self.learning, caller.identity.id, session.id if session else None)
            trail.client_results(request.messages, tools.searchable)
            loop = ChatLoop(
                route,
                tools,
                self.mcp,
                max_rounds or config.max_rounds,
                config.max_tool_calls_per_round,
                config.max_searches_per_request,
                policy=policy,
                hosted=hosted,
                hosted_dropped=dropped,
                trace=trace,
                identity=caller.identity,
            )
            yield Routed(route.provider.name, route.model)
            remembered = False
            try:
                async with aclosing(loop.events(request)) as events:
                    async for event in events:
                        if meter is not None:
                            meter.observe(event)
                        if isinstance(event, Finished | Failed) and not remembered:
                            remembered = True  # before the last event: its reader may stop there
                            spans.observe(trace, event)
                            await self._remember(session, tools, loop.tools_called)
                            await trail.finish()
                            if loop.kept is not None:
                                await self.rounds.keep(caller.identity, loop.kept)
                            await _settle(admission, meter)
                        yield event
            finally:
                if not remembered:  # the client left mid-way: what was found still counts, and what was spent
                    await self._remember(session, tools, loop.tools_called)
                    await trail.finish()
                    await _settle(admission, meter)
        except Exception as exc:  # refused before any event (a model or tool set not allowed, a limit, a session id)
            spans.failed(trace.span, exc)
            raise
        finally:
            if admission is not None:
                await admission.release()
            trace.span.end()

    def _meter(self, request: ChatRequest, route: Route, caller: Caller) -> TokenMeter | None:
        """For an identity with a day's token budget: the meter that estimates what the request reserves (its
        prompt's tokens and the most its answer may take) and counts what it spends where its upstream does not
        say."""
        if caller.identity.limits.tokens_per_day is None:
            return None
        answer = route.options(request.options).max_tokens or self.config.limits.default_output_tokens
        return TokenMeter(request, answer, self.prompt_counts)

    async def _remember(self, session: SessionKey | None, tools: RequestTools, called: list[str]) -> None:
        if session is not None:
            await self.sessions.remember(session, tools.discovered, tools.found_turns(called))

    async def request_tools(
        self,
        request: ChatRequest,
        session: SessionKey | None,
        scope: ToolScope | None = None,
        deferral: str = "tools",
        search_output: bool = False,
    ) -> RequestTools:
        """`deferral`: how found tools reach the upstream (see `route_deferral`)."""
        remembered = await self.sessions.found(session) if session is not None else {}
        return await tools_for(
            self.mcp.catalog, self.config, request, self.discovery, remembered, scope, deferral, search_output
        )


def route_deferral(provider: Provider, config: Config) -> tuple[str, bool]:
    """How found tools reach a route's upstream: its provider's `deferral`, and whether `native` there means tool
    search outputs (a Responses upstream). A fallback chain whose providers would need different shapes gets
    `tools`, which every upstream reads alike."""
    names = [candidate.name for candidate, _ in getattr(provider, "candidates", ())] or [provider.name]
    modes = set()
    for name in names:
        configured = config.providers.get(name)
        mode = (configured.deferral or "tools") if configured is not None else "tools"
        search_output = mode == "native" and configured is not None and configured.type == "openai_responses"
        modes.add((mode, search_output))
    return modes.pop() if len(modes) == 1 else ("tools", False)


async def _settle(admission: Admission | None, meter: TokenMeter | None) -> None:
    if admission is not None and meter is not None:
        await admission.settle(meter.close())
