"""The gateway's long-lived parts, shared by every request: config, MCP connections, providers, caches."""

from __future__ import annotations

from typing import Any

from app import redaction
from app.config import Config
from app.core.catalog import select_mcp_tools
from app.core.model import ChatRequest
from app.discovery.semantic import SemanticSearch
from app.engine.metrics import Metrics
from app.engine.recent import RecentRequests
from app.engine.request_tools import DiscoveryCache, RequestTools, tools_for
from app.engine.responses_store import response_store
from app.engine.sessions import SessionKey, session_store
from app.engine.tasks import TaskRunner
from app.logs import guard_secrets
from app.mcp.client.connections import McpManager
from app.providers import Router


class Gateway:
    """Everything a request needs that outlives it: config, MCP connections, providers, caches."""

    def __init__(self, config: Config, mcp_targets: dict[str, Any] | None = None) -> None:
        self.config = config
        self.started = False
        self._secrets = guard_secrets(config.secrets())
        self.metrics = Metrics()
        self.recent = RecentRequests(config.console.recent_requests)  # finished requests, for the console
        self.mcp = McpManager(config, mcp_targets, self.metrics.record_mcp_call)
        self.router = Router(config)
        self.semantic = SemanticSearch(config.tool_discovery.semantic, config.base_dir)
        self.discovery = DiscoveryCache(config.tool_discovery.manifest_max_tokens, self.semantic)
        run_task = config.mcp_front.run_task
        self.tasks = TaskRunner(config, run_task, self.router, self.mcp, self.discovery) if run_task else None
        self.sessions = session_store(config.sessions)
        self.responses = response_store(config.responses_store, config.sessions.redis_url)

    async def start(self) -> None:
        await self.semantic.start()  # loads the model in the background; keyword search serves meanwhile
        await self.mcp.start()
        self._prepare_discovery()
        self.mcp.listeners.append(self._prepare_discovery)
        self.started = True

    def _prepare_discovery(self) -> None:
        """Build the index and manifest (and queue the tools for embedding) now, at start-up or after a catalog
        change, rather than in the first request that needs them (a few hundred ms on 2 cores)."""
        catalog = self.mcp.catalog
        self.discovery.get(catalog, None, select_mcp_tools(catalog, self.config, None))

    async def stop(self) -> None:
        await self.semantic.aclose()
        await self.mcp.stop()
        await self.router.aclose()
        await self.sessions.aclose()
        await self.responses.aclose()
        redaction.unregister(self._secrets)

    async def request_tools(self, request: ChatRequest, session: SessionKey | None) -> RequestTools:
        remembered = await self.sessions.tools(session) if session is not None else []
        return await tools_for(self.mcp.catalog, self.config, request, self.discovery, remembered)
