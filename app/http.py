"""HTTP routes: OpenAI's `/v1/chat/completions` and `/v1/models`, plus `/healthz`.

A request reads top to bottom: body -> model route -> the request's tools -> the loop -> the response, with
one log line at the end. Every failure is answered in OpenAI's error shape; tracebacks stay in the log.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.auth import ApiKeyMiddleware
from app.edge import EdgeGuard, JsonBodies, request_id_of
from app.gateway import Gateway
from app.loop import ChatLoop
from app.mcp_http import HttpFront, McpPathDispatch
from app.observability import METRICS_CONTENT_TYPE, log_fields
from app.protocol import GatewayError, error_body, parse_chat_request
from app.sse import EventStreamResponse
from app.streaming import sse, stream_chat

log = logging.getLogger("toolsift.http")
_PRINTABLE_ASCII = re.compile(r"[\x21-\x7e]+")
CORS_HEADERS = ["authorization", "content-type", "x-session-id", "x-request-id", "x-upstream-authorization"]
CORS_HEADERS += ["mcp-session-id", "mcp-protocol-version", "last-event-id"]


def create_app(gateway: Gateway) -> ASGIApp:
    mcp_front = HttpFront(gateway.config)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await gateway.start()
        try:
            mcp_front.populate(gateway.mcp)
            async with mcp_front.lifespan():
                yield
        finally:
            await gateway.stop()

    docs = gateway.config.api_docs
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
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return JSONResponse(error_body(str(exc.detail), kind), exc.status_code)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        servers = gateway.mcp.health()
        up = all(server["state"] in ("up", "disabled") for server in servers.values())
        return {"status": "ok" if up else "degraded", "servers": servers}

    @app.get("/readyz")
    async def readyz() -> Response:
        """Ready when the gateway itself can serve: started, with a routable provider. A down MCP server is
        reported by /healthz and answered per call; it does not make the gateway unready."""
        problems = []
        if not gateway.started:
            problems.append("starting")
        if not gateway.config.providers:
            problems.append("no provider is configured")
        body = {"status": "ready" if not problems else "not ready", "problems": problems}
        return JSONResponse(body, 200 if not problems else 503)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(gateway.metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        data = [
            {"id": alias, "object": "model", "created": 0, "owned_by": model.provider}
            for alias, model in gateway.config.models.items()
        ]
        return {"object": "list", "data": data}

    async def chat_completions(request: Request) -> Response:
        return await _chat(gateway, request)

    # The hot path: a plain route, also reached directly by ChatFastPath (below) without FastAPI's middleware,
    # routing, exception and exit-stack layers, which this handler does not use (it reads and limits its body
    # itself and answers every error in OpenAI's shape). The guards wrap both ways in.
    app.router.routes.append(Route("/v1/chat/completions", chat_completions, methods=["POST"]))
    return _guarded(ChatFastPath(app, _ChatEndpoint(gateway)), gateway)


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


async def _chat(gateway: Gateway, request: Request) -> Response:
    # One pass over the raw headers: Starlette's Headers scans the list per lookup and raises per missing name.
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in request.scope["headers"]}
    request_id = request_id_of(request.scope)
    started = time.perf_counter()
    facts: dict[str, Any] = {"model": None, "provider": None}
    loop: ChatLoop | None = None
    try:
        body = await _read_body(request, headers.get("content-length"), gateway.config.max_request_bytes)
        chat_request, payload = parse_chat_request(body, gateway.config.max_messages, gateway.config.max_client_tools)
        facts["model"] = chat_request.model
        route = gateway.router.route(chat_request.model, _client_upstream_key(headers, gateway))
        facts["provider"] = route.provider.name
        session_id = headers.get("x-session-id") or chat_request.session_id
        tools = await gateway.request_tools(chat_request, session_id)
        loop = ChatLoop(route, tools, gateway.mcp, gateway.config.max_rounds)
        if chat_request.stream:
            return await _stream(gateway, loop, payload, request_id, started, facts, session_id)
        try:
            async with asyncio.timeout(gateway.config.request_deadline):
                result = await loop.run(payload)
        except TimeoutError:
            raise GatewayError(
                504,
                f"The request did not finish within the gateway's {gateway.config.request_deadline:g}s deadline.",
                "server_error",
                code="request_deadline",
            ) from None
        if session_id:
            await gateway.sessions.remember(session_id, tools.discovered)
        response: Response = JSONResponse(result)
    except GatewayError as exc:
        response = JSONResponse(exc.body(), exc.status)
    except ClientDisconnect:  # gone (or cut off by the body timeout) before the body was read: nobody to answer
        response = JSONResponse(error_body("The client disconnected.", "invalid_request_error"), 499)
    except Exception:
        log.exception("unhandled error id=%s", request_id)
        response = JSONResponse(
            error_body(f"Internal gateway error (request {request_id}); see the gateway log.", "server_error"), 500
        )
    response.headers["x-request-id"] = request_id
    _log_request(gateway, request_id, response.status_code, started, facts, loop)
    return response


async def _stream(
    gateway: Gateway,
    loop: ChatLoop,
    payload: dict[str, Any],
    request_id: str,
    started: float,
    facts: dict[str, Any],
    session_id: str | None,
) -> Response:
    """Start the stream before answering, so errors up to the upstream's first chunk keep their HTTP status."""
    events = stream_chat(loop, payload, gateway.config.stream_keepalive_seconds)
    try:
        first = await anext(events)
    except BaseException:
        await events.aclose()
        raise

    async def body() -> AsyncGenerator[str, None]:
        try:
            yield first
            async for event in events:
                yield event
        finally:
            await events.aclose()

    async def close(finished: bool) -> None:
        if session_id:
            await gateway.sessions.remember(session_id, loop.tools.discovered)
        _log_request(gateway, request_id, 200 if finished else 499, started, {**facts, "stream": True}, loop)

    limit = gateway.config.request_deadline
    message = f"The request did not finish within the gateway's {limit:g}s deadline."
    return EventStreamResponse(
        body(),
        headers={"x-request-id": request_id},
        on_close=close,
        timeout=max(limit - (time.perf_counter() - started), 0.001),
        timeout_event=sse(error_body(message, "server_error", code="request_deadline")),
    )


class _ChatEndpoint:
    """`POST /v1/chat/completions` as a bare ASGI app."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await _chat(self.gateway, Request(scope, receive))
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


def _client_upstream_key(headers: dict[str, str], gateway: Gateway) -> str | None:
    """The caller's own upstream key, for providers with `forward_client_auth`: `X-Upstream-Authorization`, or
    `Authorization` when that header is not already the gateway key."""
    names = ["x-upstream-authorization"] + ([] if gateway.config.auth.api_keys else ["authorization"])
    for header in names:
        scheme, _, token = headers.get(header, "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            if not _PRINTABLE_ASCII.fullmatch(token.strip()):  # httpx could not send it on
                raise GatewayError(
                    400, f"'{header}' must carry a key of printable ASCII characters.", code="invalid_api_key"
                )
            return token.strip()
    return None


async def _read_body(request: Request, declared: str | None, limit: int) -> bytes:
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> GatewayError:
    return GatewayError(
        413, f"Request body is larger than the gateway's limit of {limit:,} bytes.", code="payload_too_large"
    )


def _log_request(
    gateway: Gateway, request_id: str, status: int, started: float, facts: dict[str, Any], loop: ChatLoop | None
) -> None:
    """The request's one log line, and its metrics."""
    metrics = gateway.metrics
    metrics.requests.labels(str(status), str(bool(facts.get("stream"))).lower()).inc()
    fields: dict[str, Any] = {"id": request_id, "status": status, **facts}
    if loop is not None:
        usage = loop.stats.usage or {}
        fields.update(
            rounds=loop.stats.rounds,
            searches=loop.tools.search_calls,
            found=",".join(loop.tools.found_by_search) or "-",
            prefetched=",".join(loop.tools.prefetched) or "-",
            called=",".join(loop.stats.tools_called) or "-",
            mcp_errors=loop.stats.mcp_errors,
            upstream_ms=round(loop.stats.upstream_seconds * 1000, 1),
            tokens=usage.get("total_tokens", "-"),
            tool_tokens_saved=loop.stats.tokens_saved,
        )
        metrics.rounds.inc(loop.stats.rounds)
        metrics.searches.inc(loop.tools.search_calls)
        metrics.discovered.inc(len(loop.tools.found_by_search))
        metrics.prefetched.inc(len(loop.tools.prefetched))
        metrics.tokens_saved.inc(loop.stats.tokens_saved)
        if loop.stats.rounds:
            metrics.upstream.labels(loop.route.provider.name).observe(loop.stats.upstream_seconds)
    fields["total_ms"] = round((time.perf_counter() - started) * 1000, 1)
    log_fields(log, "request", fields)
