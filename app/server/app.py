"""The ASGI app: the fronts' routes (app/server/fronts.py, mounted by app/server/mounting.py) and the gateway's own
(app/server/routes.py) served by one dispatcher, behind the guards every path passes (app/server/edge.py, auth.py).

Each front's chat requests run through one pipeline (app/server/serve.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from app.engine.api import Engine
from app.server.auth import ApiKeyMiddleware, Operators
from app.server.edge import EdgeGuard, JsonBodies
from app.server.endpoints import Endpoints
from app.server.fronts import FRONTS
from app.server.mounting import lifespans, mount
from app.server.redacting import RedactedAnswers
from app.server.routes import OPEN_PATHS, OPERATOR_VIEWS, openapi, routes
from app.server.surfaces import shape_for

TITLE = "toolsift"
CORS_HEADERS = ["authorization", "content-type", "x-session-id", "x-request-id", "x-upstream-authorization"]
CORS_HEADERS += ["mcp-session-id", "mcp-protocol-version", "last-event-id"]
CORS_HEADERS += ["x-api-key", "anthropic-version", "anthropic-beta"]


def create_app(engine: Engine) -> ASGIApp:
    fronts = [mounted for front in FRONTS for mounted in mount(front, engine)]
    endpoints = Endpoints(engine, openapi(TITLE, fronts), TITLE)
    running = lifespans(fronts)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await engine.start()
        try:
            async with running():
                yield
        finally:
            await engine.stop()

    router: list[BaseRoute] = []
    direct: dict[tuple[str, str], ASGIApp] = {}
    mounts: list[tuple[str, ASGIApp]] = []
    for mounted in fronts:
        route = mounted.route
        if mounted.app is not None:
            mounts.append((route.path, mounted.app))
        elif mounted.handler is not None:
            router.append(Route(route.path, mounted.handler, methods=list(route.methods)))
            if route.direct:
                direct.update({(method, route.path): _bare(mounted.handler) for method in route.methods})
    for entry in routes(engine.config.api_docs):
        router.append(Route(entry.path, partial(entry.handler, endpoints), methods=list(entry.methods)))
    routed = Starlette(routes=router, exception_handlers={HTTPException: _unrouted}, lifespan=lifespan)
    dispatch = Dispatch(direct, mounts, routed)
    return _guarded(dispatch, engine)


async def _unrouted(request: Request, exc: Exception) -> Response:
    """404 and 405 from the router, in the shape of the front the path is under."""
    assert isinstance(exc, HTTPException)
    return JSONResponse(shape_for(request.url.path).unrouted(exc.status_code, str(exc.detail)), exc.status_code)


def _bare(handler: Callable[[Request], Awaitable[Response]]) -> ASGIApp:
    """A handler as an ASGI app of its own: it reads and limits its body itself and answers every error in its
    front's shape, so it needs none of the router's layers."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await handler(Request(scope, receive))
        await response(scope, receive, send)

    return app


class Dispatch:
    """The one dispatcher: a `direct` (method, path) or a mounted prefix goes straight to its handler; everything
    else, lifespan included, to the router (`routed`), which answers 404 and 405 too."""

    def __init__(
        self, direct: dict[tuple[str, str], ASGIApp], mounts: list[tuple[str, ASGIApp]], routed: ASGIApp
    ) -> None:
        self.direct = direct
        self.mounts = mounts
        self.routed = routed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            app = self.direct.get((scope["method"], path))
            if app is None:
                app = next((app for prefix, app in self.mounts if _under(path, prefix)), None)
            if app is not None:
                await app(scope, receive, send)
                return
        elif scope["type"] == "websocket":
            await _http_only(scope, receive, send)
            return
        await self.routed(scope, receive, send)


async def _http_only(scope: Scope, receive: Receive, send: Send) -> None:
    """A WebSocket upgrade is answered 426 Upgrade Required, in its front's shape: Codex tries the Responses API
    over a WebSocket first and falls back to HTTP at once on a 426, where the 403 of an unknown route had it retry
    five times (6 s) first. A server without the ASGI denial-response extension closes the handshake instead."""
    websocket = WebSocket(scope, receive, send)
    message = "This gateway serves this API over HTTP only: send the request as a plain HTTP request."
    denial = JSONResponse(shape_for(scope["path"]).unrouted(426, message), 426)
    try:
        await websocket.send_denial_response(denial)
    except RuntimeError:
        await websocket.close(1008)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def _guarded(app: ASGIApp, engine: Engine) -> ASGIApp:
    """Every path behind, outermost first: request id, origin and host checks (before any work); CORS, so that
    preflights from allowed origins are answered without a key; gateway keys; JSON-only bodies. Every answer
    leaves through the one redaction point (app/server/redacting.py)."""
    config = engine.config
    app = JsonBodies(app)
    if engine.identities:
        app = ApiKeyMiddleware(app, engine.identities, Operators(config.auth), OPEN_PATHS, OPERATOR_VIEWS)
    if config.cors_origins:
        app = CORSMiddleware(
            app,
            allow_origins=config.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=CORS_HEADERS,
            expose_headers=["x-request-id", "mcp-session-id", "x-toolsift-warning"],  # a response not stored
        )
    return EdgeGuard(RedactedAnswers(app), config.cors_origins, keyed=bool(config.auth.api_keys))
