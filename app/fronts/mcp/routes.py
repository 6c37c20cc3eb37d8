"""The MCP front's route: `/mcp`, MCP over streamable HTTP, one MCP server per tool scope.

MCP's 2026-07-28 protocol is sessionless over HTTP, so "this session" needs a client identity: the gateway key is
it. Each key's searches enable tools for that key only; with no gateway keys there is no identity, so `lazy` falls
back to `proxy` (fixed meta-tools) and says so in `search_tools`' description.
"""

from __future__ import annotations

from typing import Any

from app.core.catalog import ToolScope
from app.engine.api import Engine
from app.fronts.mcp.server import McpFront, Mode
from app.fronts.routing import ANY, FrontSpec, Route, Sessions

PATH = "/mcp"
NO_IDENTITY_NOTE = (
    "(This HTTP endpoint has no client identity, since no gateway keys are configured, so found tools are not "
    "added to your tool list: run them with call_tool.)"
)


def routes(engine: Engine) -> tuple[Route, ...]:
    configured = engine.config.mcp_front.mode
    mode: Mode = configured if engine.identities or configured != "lazy" else "proxy"
    note = NO_IDENTITY_NOTE if mode != configured else ""

    def serving(scope: ToolScope, verifier: Any, path: str) -> Any:
        return McpFront(engine, mode, scope, note, verifier).server.http_app(path=path)

    return (Route(PATH, ANY, "The MCP front (streamable HTTP)", Sessions(serving)),)


FRONT = FrontSpec("mcp", PATH, McpFront.shape, routes)
