"""The MCP front over streamable HTTP at `/mcp`, in the same process as the chat-completions API.

MCP's 2026-07-28 protocol is sessionless over HTTP, so "this session" needs a client identity: the gateway
key is it (its `Identity`, as for chat sessions). Each key's searches enable tools for that key only, and on
handshake-era protocols for that key's MCP session only; with no gateway keys configured there is no identity,
so `lazy` falls back to `proxy` (fixed meta-tools) and says so. `/mcp?tool_set=NAME` serves a tool
set's tools only; one front per tool set, built when the gateway starts. This is the edge's part (the path, the
gateway keys, HTTP errors); the MCP front itself is app/fronts/mcp/.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

from fastmcp.server.auth import AccessToken, TokenVerifier
from starlette.types import Receive, Scope, Send

from app.core.catalog import unknown_tool_set
from app.engine.gateway import Gateway
from app.errors import GatewayError
from app.fronts.mcp.server import McpFront, Mode
from app.server.auth import identify
from app.server.routes import MCP

PATH = MCP.prefix
NO_IDENTITY_NOTE = (
    "(This HTTP endpoint has no client identity, since no gateway keys are configured, so found tools are not "
    "added to your tool list: run them with call_tool.)"
)


class GatewayKeyVerifier(TokenVerifier):
    """A gateway key is the MCP client's identity (the same `Identity` the key middleware records), never the key
    itself; the MCP library binds each handshake-era session to it, so a session id works with its own key only."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__()
        self.keys = [key.encode() for key in keys if key]

    async def verify_token(self, token: str) -> AccessToken | None:
        identity = identify(token.encode(), self.keys)
        return AccessToken(token=token, client_id=identity.id, scopes=[]) if identity is not None else None


class HttpFront:
    """ASGI app for `/mcp`: dispatches to the front of the requested tool set."""

    def __init__(self, gateway: Gateway) -> None:
        config = self.config = gateway.config
        keys = config.auth.api_keys
        mode: Mode = config.mcp_front.mode if keys or config.mcp_front.mode != "lazy" else "proxy"
        note = NO_IDENTITY_NOTE if mode != config.mcp_front.mode else ""
        self.fronts = {
            name: McpFront(gateway, mode, name, note, GatewayKeyVerifier(keys) if keys else None)
            for name in [None, *config.tool_sets]
        }
        self.apps: dict[str | None, Any] = {
            name: front.server.http_app(path=PATH) for name, front in self.fronts.items()
        }

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for app in self.apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = parse_qs((scope.get("query_string") or b"").decode())
        tool_set = (query.get("tool_set") or [None])[0]
        app = self.apps.get(tool_set)
        if app is None:
            await _error(send, unknown_tool_set(tool_set, self.config).as_gateway_error())
            return
        await app(scope, receive, send)


async def _error(send: Send, error: GatewayError) -> None:
    body = json.dumps(error.body()).encode()
    await send(
        {"type": "http.response.start", "status": error.status, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": body})
