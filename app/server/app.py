"""HTTP routes: OpenAI's `/v1/chat/completions` and `/v1/models`, plus `/healthz`.

A request reads top to bottom: body -> model route -> the request's tools -> the loop -> the response, with
one log line at the end. Every failure is answered in OpenAI's error shape; tracebacks stay in the log.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app import redaction
from app.engine.gateway import Gateway
from app.engine.loop import ChatLoop
from app.engine.sessions import SessionKey, session_of
from app.fronts.chat_completions import GatewayError, error_body, parse_chat_request
from app.fronts.chat_stream import stream_chat
from app.mcp.front.http import HttpFront, McpPathDispatch
from app.server.auth import ApiKeyMiddleware
from app.server.disconnect import ClientGone, run_while_connected
from app.server.edge import EdgeGuard, JsonBodies, request_id_of
from app.server.observability import METRICS_CONTENT_TYPE, REQUEST_ID, log_fields
from app.server.sse import CLIENT_GONE, ErrorAnswer, EventStreamResponse

log = logging.getLogger("toolsift.http")
OFF_LOOP_BODY_BYTES = 256 * 1024
_PRINTABLE_ASCII = re.compile(r"[\x21-\x7e]+")
CORS_HEADERS = ["authorization", "content-type", "x-session-id", "x-request-id", "x-upstream-authorization"]
CORS_HEADERS += ["mcp-session-id", "mcp-protocol-version", "last-event-id"]


def create_app(gateway: Gateway) -> ASGIApp:
    mcp_front = HttpFront(gateway.config)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await gateway.start()
        try:
            mcp_front.populate(gateway.mcp, gateway.semantic)
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
    REQUEST_ID.set(request_id)  # every log line of this request (retries, fallbacks, MCP calls) carries it
    started = time.perf_counter()
    facts: dict[str, Any] = {"model": None, "provider": None}
    loop: ChatLoop | None = None
    try:
        body = await _read_body(request, headers.get("content-length"), gateway.config.max_request_bytes)
        limits = (gateway.config.max_messages, gateway.config.max_client_tools)
        if len(body) > OFF_LOOP_BODY_BYTES:  # decoding and validating a large body takes milliseconds
            chat_request, payload = await asyncio.to_thread(parse_chat_request, body, *limits)
        else:
            chat_request, payload = parse_chat_request(body, *limits)
        facts["model"] = chat_request.model
        client_key = _client_upstream_key(headers, gateway)
        if client_key and any(provider.forward_client_auth for provider in gateway.config.providers.values()):
            redaction.add_request_secret(client_key)  # an upstream may echo the caller's own key too
        route = gateway.router.route(chat_request.model, client_key)
        facts["provider"] = route.provider.name
        session = session_of(
            request.scope, headers.get("x-session-id"), chat_request.session_id, gateway.config.max_session_id_chars
        )
        tools = await gateway.request_tools(chat_request, session)
        loop = ChatLoop(route, tools, gateway.mcp, gateway.config.max_rounds)
        if chat_request.stream:
            return _stream(gateway, loop, payload, request_id, started, facts, session)
        remaining = max(gateway.config.request_deadline - (time.perf_counter() - started), 0.001)
        try:
            result = await run_while_connected(request.receive, loop.run(payload), remaining)
        except TimeoutError:
            raise _deadline_error(gateway) from None
        if session is not None:
            await gateway.sessions.remember(session, tools.discovered)
        response: Response = JSONResponse(result)
    except ClientGone:
        response = Response(status_code=CLIENT_GONE)  # nobody reads it: the status is for the log and metrics
    except GatewayError as exc:
        response = JSONResponse(exc.body(), exc.status)
    except ClientDisconnect:  # gone (or cut off by the body timeout) before the body was read: nobody to answer
        response = JSONResponse(error_body("The client disconnected.", "invalid_request_error"), 499)
    except Exception:
        status, error = _unexpected(request_id)
        response = JSONResponse(error, status)
    response.headers["x-request-id"] = request_id
    _log_request(gateway, request_id, response.status_code, started, facts, loop)
    return response


def _deadline_error(gateway: Gateway) -> GatewayError:
    return GatewayError(
        504,
        f"The request did not finish within the gateway's {gateway.config.request_deadline:g}s deadline.",
        "server_error",
        code="request_deadline",
    )


def _unexpected(request_id: str) -> ErrorAnswer:
    """A gateway bug: the traceback goes to the log (call from an `except` block), the client gets its id."""
    log.exception("unhandled error id=%s", request_id)
    return 500, error_body(f"Internal gateway error (request {request_id}); see the gateway log.", "server_error")


def _stream(
    gateway: Gateway,
    loop: ChatLoop,
    payload: dict[str, Any],
    request_id: str,
    started: float,
    facts: dict[str, Any],
    session: SessionKey | None,
) -> Response:
    """The stream, under the request's deadline from the first moment (the upstream's first chunk included)."""

    def error(exc: Exception) -> ErrorAnswer:
        return (exc.status, exc.body()) if isinstance(exc, GatewayError) else _unexpected(request_id)

    async def close(status: int) -> None:
        if session is not None:
            await gateway.sessions.remember(session, loop.tools.discovered)
        _log_request(gateway, request_id, status, started, {**facts, "stream": True}, loop)

    timeout = _deadline_error(gateway)
    return EventStreamResponse(
        stream_chat(loop, payload),
        error=error,
        deadline=max(gateway.config.request_deadline - (time.perf_counter() - started), 0.001),
        deadline_error=(timeout.status, timeout.body()),
        keepalive=gateway.config.stream_keepalive_seconds,
        headers={"x-request-id": request_id},
        on_close=close,
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
