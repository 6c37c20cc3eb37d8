"""The demo model over HTTP: OpenAI's chat completions, plain and streamed (SSE, usage when asked), served by its
own uvicorn on a free loopback port in a background thread, so the gateway reaches it exactly as it reaches a
real provider.

That port is as reachable as the gateway's own, from a browser page too, so it stands behind the same edge
(app/server/edge.py: foreign origins, rebound host names and non-JSON bodies refused before any work) and the
same body limit (the gateway's `max_request_bytes`)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from app.common.errors import GatewayError, error_body
from app.demo.model import Reply, respond
from app.server.edge import EdgeGuard, JsonBodies
from app.server.serve import read_body

MODEL_NAME = "toolsift-demo"
MAX_BODY_BYTES = 16 * 1024 * 1024  # the gateway's own default max_request_bytes


def create_model_app(max_body_bytes: int = MAX_BODY_BYTES) -> Starlette:
    """The model's routes, its body read under `max_body_bytes`."""

    async def complete(request: Request) -> Response:
        length = request.headers.get("content-length")
        try:
            raw = await read_body(request, length, max_body_bytes)
        except GatewayError as exc:
            return JSONResponse(error_body(exc.message, exc.type, code=exc.code), status_code=exc.status)
        return _complete(raw)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", complete, methods=["POST"]),
            Route("/v1/models", _models, methods=["GET"]),
        ]
    )


def guarded_model_app(max_body_bytes: int = MAX_BODY_BYTES) -> ASGIApp:
    """The model app behind the gateway's edge: what its port serves."""
    return EdgeGuard(JsonBodies(create_model_app(max_body_bytes)), cors_origins=[], keyed=False)


async def _models(request: Request) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "toolsift"}]})


def _complete(raw: bytes) -> Response:
    try:
        body = json.loads(raw)
    except ValueError:
        return JSONResponse(error_body("The body is not valid JSON.", "invalid_request_error"), status_code=400)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        problem = "'messages' must be a list of chat messages."
        return JSONResponse(error_body(problem, "invalid_request_error", "messages"), status_code=400)
    reply = respond(body)
    usage = _usage(body, reply)
    head = {"id": f"chatcmpl-demo-{uuid.uuid4().hex[:16]}", "created": int(time.time()), "model": MODEL_NAME}
    finish = "tool_calls" if reply.tool_calls else "stop"
    if body.get("stream") is True:
        include_usage = isinstance(body.get("stream_options"), dict) and body["stream_options"].get("include_usage")
        chunks = _chunks(head, reply, finish, usage if include_usage else None)
        return StreamingResponse(chunks, media_type="text/event-stream")
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return JSONResponse({**head, "object": "chat.completion", "choices": [choice], "usage": usage})


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    """Rough counts (four characters a token): the demo has no tokenizer of its own to report."""
    prompt = len(json.dumps(body.get("messages"))) + len(json.dumps(body.get("tools") or []))
    completion = len(reply.content or "") + len(json.dumps(reply.tool_calls))
    prompt_tokens, completion_tokens = prompt // 4 + 1, completion // 4 + 1
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}  # fmt: skip


def _chunks(head: dict[str, Any], reply: Reply, finish: str, usage: dict[str, int] | None) -> Iterator[str]:
    """As OpenAI streams: role first, content a few words at a time, each tool call's arguments in pieces."""
    base = {**head, "object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for words in re.findall(r"(?:\S+\s*){1,4}", reply.content or ""):
        yield chunk({"content": words})
    for index, call in enumerate(reply.tool_calls):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        start = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**start, "function": {"name": call["function"]["name"], "arguments": ""}}]})
        for piece in (arguments[:half], arguments[half:]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, finish)
    if usage is not None:
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


class DemoModel:
    """The demo model served in a background thread of this process; `base_url` is what a provider points at."""

    def __init__(self, host: str = "127.0.0.1", max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._socket = socket.socket()
        self._socket.bind((host, 0))  # bound here and handed to uvicorn, so no other process can take the port
        self.port: int = self._socket.getsockname()[1]
        self.host = host
        app = guarded_model_app(max_body_bytes)
        config = uvicorn.Config(app, host=host, port=self.port, log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="demo-model", daemon=True)

    def _run(self) -> None:
        self._server.run(sockets=[self._socket])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout: float = 10.0) -> DemoModel:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the demo model did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)
