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

from app import redaction
from app.engine.answer import aggregate
from app.engine.gateway import Gateway
from app.engine.loop import ChatLoop
from app.engine.model import ChatRequest
from app.engine.record import RequestRecord
from app.engine.request_tools import RequestTools
from app.engine.sessions import SessionKey, session_of
from app.errors import GatewayError, RequestRefused, error_body
from app.fronts.chat_completions import ChatStream, chat_request, chat_sse, completion
from app.fronts.chat_wire import parse_chat_request
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

    async def chat_completions(request: Request) -> Response:
        return await _chat(gateway, request)

    # The hot path: a plain route, also reached directly by ChatFastPath (below) without FastAPI's middleware,
    # routing, exception and exit-stack layers, which this handler does not use (it reads and limits its body
    # itself and answers every error in OpenAI's shape). The guards wrap both ways in.
    app.router.routes.append(Route("/v1/chat/completions", chat_completions, methods=["POST"]))
    return _guarded(ChatFastPath(app, _ChatEndpoint(gateway)), gateway)


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


async def _chat(gateway: Gateway, request: Request) -> Response:
    # One pass over the raw headers: Starlette's Headers scans the list per lookup and raises per missing name.
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in request.scope["headers"]}
    request_id = request_id_of(request.scope)
    REQUEST_ID.set(request_id)  # every log line of this request (retries, fallbacks, MCP calls) carries it
    started = time.perf_counter()
    facts: dict[str, Any] = {"model": None, "provider": None}
    record = RequestRecord()
    try:
        body = await _read_body(request, headers.get("content-length"), gateway.config.max_request_bytes)
        limits = (gateway.config.max_messages, gateway.config.max_client_tools)
        if len(body) > OFF_LOOP_BODY_BYTES:  # decoding and validating a large body takes milliseconds
            chat = await asyncio.to_thread(_parse, body, *limits)
        else:
            chat = _parse(body, *limits)
        facts["model"] = chat.model
        client_key = _client_upstream_key(headers, gateway)
        if client_key and any(provider.forward_client_auth for provider in gateway.config.providers.values()):
            redaction.add_request_secret(client_key)  # an upstream may echo the caller's own key too
        route = gateway.router.route(chat.model, client_key)
        facts["provider"] = route.provider.name
        session = session_of(
            request.scope, headers.get("x-session-id"), chat.session_id, gateway.config.max_session_id_chars
        )
        tools = await gateway.request_tools(chat, session)
        loop = ChatLoop(route, tools, gateway.mcp, gateway.config.max_rounds)
        events = record.observe(loop.events(chat))
        if chat.stream:
            facts["stream"] = True
            stream = ChatStream(route.model, chat.options.include_usage)
            return _stream(gateway, chat_sse(events, stream), request_id, started, facts, record, session, tools)
        remaining = max(gateway.config.request_deadline - (time.perf_counter() - started), 0.001)
        try:
            answer = await run_while_connected(request.receive, aggregate(events), remaining)
        except TimeoutError:
            raise _deadline_error(gateway) from None
        if session is not None:
            await gateway.sessions.remember(session, tools.discovered)
        response: Response = JSONResponse(completion(answer, route.model))
    except ClientGone:
        response = Response(status_code=CLIENT_GONE)  # nobody reads it: the status is for the log and metrics
    except RequestRefused as exc:
        response = JSONResponse(exc.as_gateway_error().body(), 400)
    except GatewayError as exc:
        response = JSONResponse(exc.body(), exc.status)
    except ClientDisconnect:  # gone (or cut off by the body timeout) before the body was read: nobody to answer
        response = JSONResponse(error_body("The client disconnected.", "invalid_request_error"), 499)
    except Exception:
        status, error = _unexpected(request_id)
        response = JSONResponse(error, status)
    response.headers["x-request-id"] = request_id
    _log_request(gateway, request_id, response.status_code, started, facts, record)
    return response


def _parse(body: bytes, max_messages: int, max_tools: int) -> ChatRequest:
    return chat_request(*parse_chat_request(body, max_messages, max_tools))


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
    sse_events: AsyncGenerator[str, None],
    request_id: str,
    started: float,
    facts: dict[str, Any],
    record: RequestRecord,
    session: SessionKey | None,
    tools: RequestTools,
) -> Response:
    """The stream, under the request's deadline from the first moment (the upstream's first chunk included)."""

    def error(exc: Exception) -> ErrorAnswer:
        return (exc.status, exc.body()) if isinstance(exc, GatewayError) else _unexpected(request_id)

    async def close(status: int) -> None:
        if session is not None:
            await gateway.sessions.remember(session, tools.discovered)
        _log_request(gateway, request_id, status, started, facts, record)

    timeout = _deadline_error(gateway)
    return EventStreamResponse(
        sse_events,
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
    gateway: Gateway, request_id: str, status: int, started: float, facts: dict[str, Any], record: RequestRecord
) -> None:
    """The request's one log line, and its metrics, from what its events recorded."""
    metrics = gateway.metrics
    metrics.requests.labels(str(status), str(bool(facts.get("stream"))).lower()).inc()
    fields: dict[str, Any] = {"id": request_id, "status": status, **facts}
    stats = record.discovery
    if stats is not None:
        fields.update(
            rounds=record.rounds,
            searches=stats.search_calls,
            found=",".join(stats.tools_discovered) or "-",
            prefetched=",".join(stats.tools_prefetched) or "-",
            called=",".join(stats.tools_called) or "-",
            mcp_errors=record.mcp_errors,
            upstream_ms=round(record.upstream_seconds * 1000, 1),
            tokens=record.usage.total_tokens if record.usage is not None else "-",
            tool_tokens_saved=record.tokens_saved,
        )
        metrics.searches.inc(stats.search_calls)
        metrics.discovered.inc(len(stats.tools_discovered))
        metrics.prefetched.inc(len(stats.tools_prefetched))
    metrics.rounds.inc(record.rounds)
    metrics.tokens_saved.inc(record.tokens_saved)
    if record.rounds and facts.get("provider"):
        metrics.upstream.labels(facts["provider"]).observe(record.upstream_seconds)
    fields["total_ms"] = round((time.perf_counter() - started) * 1000, 1)
    log_fields(log, "request", fields)
