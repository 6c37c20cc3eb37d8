"""The edge of every front's request: read the body, let the front parse it, call the engine's one entry
(`Engine.chat`), and render its events as the front's answer or stream, with one log line at the end.

What the engine needs of the connection (who calls, the request id, the session header, the caller's own upstream
key) is read here into a plain `Caller`; nothing below this module reads a scope or a header.

Every failure is answered in the front's own error shape; tracebacks stay in the log. The log line and metrics
are the engine's (`Engine.finished`), counted from the loop's events.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from app.common.errors import GatewayError, RequestRefused
from app.common.identity import identity_of
from app.common.logs import REQUEST_ID
from app.common.offload import Lane
from app.engine.answer import aggregate
from app.engine.api import Caller, ChatRun, Engine
from app.fronts.base import Call, Front, Limits
from app.fronts.routing import Counting
from app.server.disconnect import ClientGone, run_while_connected
from app.server.edge import request_id_of
from app.server.sse import CLIENT_GONE, ErrorAnswer, EventStreamResponse

log = logging.getLogger("toolsift.http")
Parsed = TypeVar("Parsed")
OFF_LOOP_BODY_BYTES = 256 * 1024
# Work that input sizes, in the worker pool: each kind in its own lane, so a flood of one never queues the other.
BODIES, COUNTS = Lane(1), Lane(1)
_PRINTABLE_ASCII = re.compile(r"[\x21-\x7e]+")


async def serve(engine: Engine, request: Request, front: Front) -> Response:
    # One pass over the raw headers: Starlette's Headers scans the list per lookup and raises per missing name.
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in request.scope["headers"]}
    request_id = request_id_of(request.scope)
    REQUEST_ID.set(request_id)  # every log line of this request (retries, fallbacks, MCP calls) carries it
    started = time.perf_counter()
    config = engine.config
    identity = identity_of(request.scope)
    call = Call(request_id, identity, Limits(config.max_messages, config.max_client_tools), headers=headers)
    facts: dict[str, Any] = {"identity": identity.id, "model": None, "provider": None}
    run: ChatRun | None = None
    try:
        chat = await _read_parsed(request, headers.get("content-length"), config.max_request_bytes, front.parse, call)
        chat = call.request = await front.prepare(chat, call)
        facts["model"] = chat.model
        upstream_key = _client_upstream_key(headers, engine)
        caller = Caller(identity, request_id, headers.get("x-session-id"), upstream_key, front=front.name)
        run = engine.chat(chat, caller)  # routed, tools built and run as it is read
        if chat.stream:
            facts["stream"] = True
            return _stream(engine, front, front.stream(run.events, call), call, started, facts, run)
        remaining = max(config.request_deadline - (time.perf_counter() - started), 0.001)
        try:
            answer = await run_while_connected(request.receive, aggregate(run.events), remaining)
        except TimeoutError:
            raise _deadline_error(engine) from None
        call.model = run.record.model or chat.model
        body = await front.answer(answer, call)
        response: Response = JSONResponse(body, headers=call.reply_headers)
    except ClientGone:
        response = Response(status_code=CLIENT_GONE)  # nobody reads it: the status is for the log and metrics
    except RequestRefused as exc:
        response = JSONResponse(front.error(_failed(facts, exc.as_gateway_error())), 400)
    except GatewayError as exc:
        exc = front.answered(exc)
        response = JSONResponse(front.error(_failed(facts, exc)), exc.status, headers=exc.headers())
    except ClientDisconnect:  # gone (or cut off by the body timeout) before the body was read: nobody to answer
        response = JSONResponse(front.error(GatewayError(499, "The client disconnected.")), 499)
    except Exception:
        status, error = _unexpected(front, request_id)
        facts["error"] = "internal gateway error (traceback above)"
        response = JSONResponse(error, status)
    response.headers["x-request-id"] = request_id
    _finished(engine, request_id, response.status_code, started, facts, run)
    return response


async def serve_count(engine: Engine, request: Request, front: Counting) -> Response:
    """A count (`POST /v1/messages/count_tokens`): the body read under the same limits, counted by the front."""
    request_id = request_id_of(request.scope)
    config = engine.config
    call = Call(request_id, identity_of(request.scope), Limits(config.max_messages, config.max_client_tools))
    length = next((value for name, value in request.scope["headers"] if name == b"content-length"), None)
    admission = None
    try:  # costs like a chat's parsing: counted against rpm, holding a concurrency slot, admitted before its body
        admission = await engine.admit(call.identity, spends=False)
        declared = length.decode("latin-1") if length else None
        body = await read_body(request, declared, config.max_request_bytes)
        try:  # parsed and counted in the worker pool, one count at a time, whatever its size
            async with asyncio.timeout(config.request_deadline):
                counted = await COUNTS.run(front.count, body, call)
        except TimeoutError:
            raise _deadline_error(engine) from None
        response: Response = JSONResponse(counted)
    except GatewayError as exc:
        response = JSONResponse(front.error(exc), exc.status, headers=exc.headers())
    except ClientDisconnect:
        response = Response(status_code=CLIENT_GONE)
    finally:
        if admission is not None:
            await admission.release()
    response.headers["x-request-id"] = request_id
    return response


async def _read_parsed(
    request: Request, declared: str | None, limit: int, parse: Callable[[bytes, Call], Parsed], call: Call
) -> Parsed:
    """The body, read under the size limit and parsed by the front; a large one is decoded and validated in the
    worker pool (milliseconds of CPU that would otherwise hold the event loop), one at a time."""
    body = await read_body(request, declared, limit)
    if len(body) > OFF_LOOP_BODY_BYTES:
        return await BODIES.run(parse, body, call)
    return parse(body, call)


def _failed(facts: dict[str, Any], error: GatewayError) -> GatewayError:
    """Note why the request failed, for its log line: a 400 in the log says what was wrong with it."""
    facts["error"] = f"{error.code}: {error.message}" if error.code else error.message
    return error


def _deadline_error(engine: Engine) -> GatewayError:
    return GatewayError(
        504,
        f"The request did not finish within the gateway's {engine.config.request_deadline:g}s deadline.",
        "server_error",
        code="request_deadline",
    )


def _unexpected(front: Front, request_id: str) -> ErrorAnswer:
    """A gateway bug: the traceback goes to the log (call from an `except` block), the client gets its id."""
    log.exception("unhandled error id=%s", request_id)
    message = f"Internal gateway error (request {request_id}); see the gateway log."
    return 500, front.error(GatewayError(500, message, "server_error"))


def _stream(
    engine: Engine,
    front: Front,
    sse_events: AsyncGenerator[str, None],
    call: Call,
    started: float,
    facts: dict[str, Any],
    run: ChatRun,
) -> Response:
    """The stream, under the request's deadline from the first moment (the upstream's first chunk included)."""

    def error(exc: Exception) -> ErrorAnswer:
        if isinstance(exc, RequestRefused):  # refused as it was routed, before the stream began
            exc = exc.as_gateway_error()
        if isinstance(exc, GatewayError):
            exc = _failed(facts, front.answered(exc))
            return exc.status, front.error(exc)
        facts["error"] = "internal gateway error (traceback above)"
        return _unexpected(front, call.request_id)

    async def close(status: int) -> None:
        _finished(engine, call.request_id, status, started, facts, run)

    timeout = _deadline_error(engine)
    return EventStreamResponse(
        sse_events,
        error=error,
        deadline=max(engine.config.request_deadline - (time.perf_counter() - started), 0.001),
        deadline_error=(timeout.status, front.error(timeout)),
        keepalive=engine.config.stream_keepalive_seconds,
        keepalive_text=front.keepalive,
        headers={**call.reply_headers, "x-request-id": call.request_id},  # the front's, as it prepared the call
        on_close=close,
    )


def _client_upstream_key(headers: dict[str, str], engine: Engine) -> str | None:
    """The caller's own upstream key, for providers with `forward_client_auth`: `X-Upstream-Authorization`, or
    `Authorization` when that header is not already the gateway key."""
    names = ["x-upstream-authorization"] + ([] if engine.identities else ["authorization"])
    for header in names:
        scheme, _, token = headers.get(header, "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            if not _PRINTABLE_ASCII.fullmatch(token.strip()):  # httpx could not send it on
                raise GatewayError(
                    400, f"'{header}' must carry a key of printable ASCII characters.", code="invalid_api_key"
                )
            return token.strip()
    return None


async def read_body(request: Request, declared: str | None, limit: int) -> bytes:
    """The body, refused (413) past `limit` bytes: by its declared length before reading, else as it arrives."""
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


def _finished(
    engine: Engine, request_id: str, status: int, started: float, facts: dict[str, Any], run: ChatRun | None
) -> None:
    """The request's one log line, its metrics and its console record, the engine's to write."""
    total_ms = round((time.perf_counter() - started) * 1000, 1)
    engine.finished(request_id, status, total_ms, facts, run.record if run is not None else None)
