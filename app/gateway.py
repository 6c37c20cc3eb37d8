"""The gateway's long-lived parts, shared by every request: config, MCP connections, providers, caches."""

from __future__ import annotations

from typing import Any

from app import redaction
from app.config import Config
from app.mcp.connections import McpManager
from app.observability import Metrics, guard_secrets
from app.protocol import ChatCompletionRequest
from app.providers import Router
from app.request_tools import (
    DiscoveryCache,
    RequestTools,
    history_tool_names,
    latest_user_text,
    prepare_request_tools,
)
from app.sessions import session_store


class Gateway:
    """Everything a request needs that outlives it: config, MCP connections, providers, caches."""

    def __init__(self, config: Config, mcp_targets: dict[str, Any] | None = None) -> None:
        self.config = config
        self.started = False
        self._secrets = guard_secrets(config.secrets())
        self.metrics = Metrics()
        self.mcp = McpManager(config, mcp_targets, self.metrics.record_mcp_call)
        self.router = Router(config)
        self.discovery = DiscoveryCache(config.tool_discovery.manifest_max_tokens)
        self.sessions = session_store(
            config.sessions.ttl_seconds, config.sessions.max_sessions, config.sessions.redis_url
        )

    async def start(self) -> None:
        await self.mcp.start()
        self.started = True

    async def stop(self) -> None:
        await self.mcp.stop()
        await self.router.aclose()
        await self.sessions.aclose()
        redaction.unregister(self._secrets)

    async def request_tools(self, request: ChatCompletionRequest, session_id: str | None) -> RequestTools:
        tools = prepare_request_tools(self.mcp.catalog, self.config, request, self.discovery)
        tools.load(history_tool_names(request.messages))
        if session_id:
            tools.load(await self.sessions.tools(session_id))
        discovery = self.config.tool_discovery
        if discovery.prefetch:
            tools.prefetch(latest_user_text(request.messages), discovery.prefetch, discovery.prefetch_min_match)
        return tools
