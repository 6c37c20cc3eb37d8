"""The ASGI app: the fronts' routes (`/v1/chat/completions`, `/v1/messages`), `/v1/models`, `/healthz`, `/readyz`,
`/metrics`, the MCP front at `/mcp`, and the guards every path passes (app/server/edge.py, auth.py).

Each front's requests run through one pipeline (app/server/serve.py).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.engine.gateway import Gateway
from app.errors import anthropic_error_body, error_body
from app.fronts.chat_completions import ChatCompletionsFront
from app.fronts.messages import MessagesFront
from app.server.admin import console_routes
from app.server.auth import ApiKeyMiddleware
from app.server.edge import EdgeGuard, JsonBodies, is_messages_path
from app.server.mcp_http import HttpFront, McpPathDispatch
from app.server.observability import METRICS_CONTENT_TYPE, exposition
from app.server.responses_routes import ResponsesApi
from app.server.serve import serve, serve_count

log = logging.getLogger("toolsift.http")
CORS_HEADERS = ["authorization", "content-type", "x-session-id", "x-request-id", "x-upstream-authorization"]
CORS_HEADERS += ["mcp-session-id", "mcp-protocol-version", "last-event-id"]
CORS_HEADERS += ["x-api-key", "anthropic-version", "anthropic-beta"]


def create_app(gateway: Gateway) -> ASGIApp:
    mcp_front = HttpFront(gateway)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await gateway.start()
        try:
            async with mcp_front.lifespan():
                yield
        finally:
            await gateway.stop()

    config = gateway.config
    docs = config.api_docs
    app = FastAPI(
        title="toolsift",
        lifespan=lifespan,
        docs_url="/docs" if docs else None,
        redoc_url=None,
        openapi_url="/openapi.json" if docs else None,
    )
    app.state.gateway = gateway
    app.add_middleware(McpPathDispatch, front=mcp_front)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        if is_messages_path(request.url.path):
            return JSONResponse(anthropic_error_body(str(exc.detail), kind), exc.status_code)
        return JSONResponse(error_body(str(exc.detail), kind), exc.status_code)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        servers = gateway.mcp.health()
        up = all(server["state"] in ("up", "disabled") for server in servers.values())
        return {"status": "ok" if up else "degraded", "servers": servers, "search": gateway.semantic.status()}

    @app.get("/readyz")
    async def readyz() -> Response:
        """Ready when the gateway itself can serve: started, with a provider that can call upstream (one whose key
        variable is unset cannot). A down MCP server is reported by /healthz and answered per call; it does not
        make the gateway unready."""
        problems = []
        if not gateway.started:
            problems.append("starting")
        unable = gateway.config.provider_problems()
        if unable is not None:
            problems.append(unable)
        body = {"status": "ready" if not problems else "not ready", "problems": problems}
        return JSONResponse(body, 200 if not problems else 503)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(exposition(gateway.metrics), media_type=METRICS_CONTENT_TYPE)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [_model(alias, model.provider) for alias, model in config.models.items()]}

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str) -> Response:
        alias = config.models.get(model_id)
        if alias is not None:
            return JSONResponse(_model(model_id, alias.provider))
        if config.default_provider is not None:  # the default provider serves any other name
            return JSONResponse(_model(model_id, config.default_provider))
        known = ", ".join(sorted(config.models)) or "none"
        message = f"The model '{model_id}' does not exist here. Models: {known}."
        return JSONResponse(error_body(message, "invalid_request_error", "model", "model_not_found"), 404)

    chat_front = ChatCompletionsFront()

    async def chat_completions(request: Request) -> Response:
        return await serve(gateway, request, chat_front)

    # The hot path: a plain route, also reached directly by ChatFastPath (below) without FastAPI's middleware,
    # routing, exception and exit-stack layers, which this handler does not use (it reads and limits its body
    # itself and answers every error in OpenAI's shape). The guards wrap both ways in.
    app.router.routes.append(Route("/v1/chat/completions", chat_completions, methods=["POST"]))
    messages_front = MessagesFront()

    async def messages(request: Request) -> Response:
        return await serve(gateway, request, messages_front)

    async def count_tokens(request: Request) -> Response:
        return await serve_count(gateway, request, messages_front)

    app.router.routes.append(Route("/v1/messages", messages, methods=["POST"]))
    app.router.routes.append(Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]))
    app.router.routes.extend(console_routes(gateway))  # /console and the admin API (app/server/admin.py)
    responses = ResponsesApi(gateway)  # the Responses API (app/fronts/responses.py), its POST a fast path too
    app.router.routes.extend(responses.routes())
    return _guarded(responses.fast_path(ChatFastPath(app, _ChatEndpoint(gateway))), gateway)


def _model(model_id: str, owner: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": owner}


def _guarded(app: ASGIApp, gateway: Gateway) -> ASGIApp:
    """Every path behind, outermost first: request id, origin and host checks (before any work); CORS, so that
    preflights from allowed origins are answered without a key; gateway keys; JSON-only bodies."""
    config = gateway.config
    app = JsonBodies(app)
    if config.auth.api_keys:
        app = ApiKeyMiddleware(app, config.auth.api_keys)
    if config.cors_origins:
        app = CORSMiddleware(
            app,
            allow_origins=config.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=CORS_HEADERS,
            expose_headers=["x-request-id", "mcp-session-id"],
        )
    return EdgeGuard(app, config.cors_origins, keyed=bool(config.auth.api_keys))


class _ChatEndpoint:
    """`POST /v1/chat/completions` as a bare ASGI app."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.front = ChatCompletionsFront()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await serve(self.gateway, Request(scope, receive), self.front)
        await response(scope, receive, send)


class ChatFastPath:
    """The ASGI app served: `POST /v1/chat/completions` goes straight to its (guarded) endpoint; everything else,
    lifespan included, to the FastAPI app."""

    def __init__(self, app: FastAPI, chat: ASGIApp) -> None:
        self.app = app
        self.chat = chat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/v1/chat/completions":
            await self.chat(scope, receive, send)
        else:
            await self.app(scope, receive, send)
