"""The MCP front over streamable HTTP at `/mcp`, in the same process as the chat-completions API.

MCP's 2026-07-28 protocol is sessionless over HTTP, so "this session" needs a client identity: the gateway
key is it (its `Identity`, as for chat sessions). Each key's searches enable tools for that key only, and on
handshake-era protocols for that key's MCP session only; with no gateway keys configured there is no identity,
so `lazy` falls back to `proxy` (fixed meta-tools) and says so. `/mcp?tool_set=NAME` serves a tool
set's tools only, narrowed to the caller identity's own tool set; one front per such scope, built when the
gateway starts. This is the edge's part (the path, the gateway keys, the identity's tool set and limits, HTTP
errors, each a JSON-RPC error); the MCP front itself is app/fronts/mcp/.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

from fastmcp.server.auth import AccessToken, TokenVerifier
from starlette.types import Message, Receive, Scope, Send

from app.common.errors import GatewayError
from app.common.identity import Identities, identity_of
from app.core.catalog import ToolScope
from app.engine.api import Engine
from app.fronts.mcp.server import McpFront, Mode
from app.server.edge import refuse_error
from app.server.surfaces import MCP

PATH = MCP.prefix
NO_IDENTITY_NOTE = (
    "(This HTTP endpoint has no client identity, since no gateway keys are configured, so found tools are not "
    "added to your tool list: run them with call_tool.)"
)


class GatewayKeyVerifier(TokenVerifier):
    """A gateway key is the MCP client's identity (the same `Identity` the key middleware records), never the key
    itself; the MCP library binds each handshake-era session to it, so a session id works with its own key only."""

    def __init__(self, identities: Identities) -> None:
        super().__init__()
        self.identities = identities

    async def verify_token(self, token: str) -> AccessToken | None:
        identity = self.identities.identify(token.encode())
        return AccessToken(token=token, client_id=identity.id, scopes=[]) if identity is not None else None


class HttpFront:
    """ASGI app for `/mcp`: dispatches to the front of the requested tool set."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        config = self.config = engine.config
        identities = engine.identities
        mode: Mode = config.mcp_front.mode if identities or config.mcp_front.mode != "lazy" else "proxy"
        note = NO_IDENTITY_NOTE if mode != config.mcp_front.mode else ""
        # One front per scope a caller can be served (the engine's `scopes`), built when the gateway starts.
        self.fronts = {
            scope: McpFront(engine, mode, scope, note, GatewayKeyVerifier(identities) if identities else None)
            for scope in engine.scopes()
        }
        self.apps: dict[ToolScope, Any] = {
            scope: front.server.http_app(path=PATH) for scope, front in self.fronts.items()
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
        identity = identity_of(scope)
        admission = None
        try:
            app = self.apps[self.engine.scope(identity, tool_set)]
            _check_length(scope, self.config.max_request_bytes)
            if scope["method"] in ("POST", "GET", "DELETE"):  # a GET is a stream that waits for messages
                admission = await self.engine.admit(identity, hold=scope["method"] == "POST")
        except GatewayError as exc:
            await refuse_error(scope, send, exc)
            return
        try:
            await app(scope, _limited(receive, self.config.max_request_bytes), send)
        finally:
            if admission is not None:
                await admission.release()


def _check_length(scope: Scope, limit: int) -> None:
    declared = next((value for name, value in scope["headers"] if name == b"content-length"), b"")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)


def _too_large(limit: int) -> GatewayError:
    return GatewayError(
        413, f"Request body is larger than the gateway's limit of {limit:,} bytes.", code="payload_too_large"
    )


def _limited(receive: Receive, limit: int) -> Receive:
    """The body as it arrives, cut off past `limit` bytes (a body sent without a length): the front sees the
    client gone and answers nothing more."""
    size = 0

    async def limited() -> Message:
        nonlocal size
        message = await receive()
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > limit:
                return {"type": "http.disconnect"}
        return message

    return limited
