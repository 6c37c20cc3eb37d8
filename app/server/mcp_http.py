"""The edge's part of the MCP front over streamable HTTP (app/fronts/mcp/routes.py declares it), in the same
process as the chat APIs: the gateway keys as MCP client identities, the identity's tool set (`?tool_set=NAME`
serves a tool set's tools only, narrowed to the caller identity's own), admission and limits, and the body's size,
each refusal a JSON-RPC error. One MCP server per tool scope, built by the front when the gateway starts.
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
from app.fronts.routing import Sessions
from app.server.edge import refuse_error


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
    """ASGI app for the MCP front's path: dispatches to the MCP server of the requested tool set."""

    def __init__(self, engine: Engine, sessions: Sessions, path: str) -> None:
        self.engine = engine
        self.config = engine.config
        identities = engine.identities
        verifier = GatewayKeyVerifier(identities) if identities else None
        # One server per scope a caller can be served (the engine's `scopes`), built when the gateway starts.
        self.apps: dict[ToolScope, Any] = {scope: sessions.serving(scope, verifier, path) for scope in engine.scopes()}

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
