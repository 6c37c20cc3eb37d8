"""A local OpenAI-compatible upstream that answers from a script, served by uvicorn in a thread.

Integration tests push the replies they want, run the real gateway against it, and read back every request
the gateway sent, so they can assert on exactly what went upstream.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ScriptedUpstream:
    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.fallback: dict[str, Any] | None = None  # the reply once the script is done (else an error)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.delay = 0.0  # seconds before each answer, for requests that must overlap
        self._lock = threading.Lock()
        self.port = free_port()
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._complete, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
            ]
        )
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedUpstream:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("scripted upstream did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)

    def script(self, *replies: dict[str, Any]) -> None:
        with self._lock:
            self.replies = list(replies)
            self.requests.clear()
            self.headers.clear()

    def tool_names(self, call: int) -> list[str]:
        return [tool["function"]["name"] for tool in self.requests[call].get("tools", [])]

    async def _next(self, request: Request) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Record the request; return its body and the next scripted reply (None when the script is done)."""
        body = json.loads(await request.body())
        if self.delay:
            await asyncio.sleep(self.delay)
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            return body, self.replies.pop(0) if self.replies else self.fallback

    async def _complete(self, request: Request) -> JSONResponse:
        body, reply = await self._next(request)
        if reply is None:
            return JSONResponse({"error": {"message": "script exhausted", "type": "test_error"}}, status_code=500)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(_as_stream(reply, include_usage), media_type="text/event-stream")
        return JSONResponse(reply)

    async def _messages(self, request: Request) -> Response:
        """The same script, spoken as Anthropic's Messages API. A message thread is refused (and recorded, using no
        reply), as a deployment without the threads beta refuses it: the SDKs' tool runners then go on without."""
        asked = json.loads(await request.body())
        if "thread" in asked:
            with self._lock:
                self.requests.append(asked)
                self.headers.append(dict(request.headers))
            details = {"error_code": "thread_unsupported_request", "unsupported": ["thread"]}
            error = {
                "type": "invalid_request_error",
                "message": "Message threads are not supported.",
                "details": details,
            }
            return JSONResponse({"type": "error", "error": error}, 400)
        body, reply = await self._next(request)
        if reply is None:
            return JSONResponse({"type": "error", "error": {"type": "api_error", "message": "script exhausted"}}, 500)
        message = _as_anthropic(reply)
        if body.get("stream"):
            return StreamingResponse(_as_anthropic_stream(message), media_type="text/event-stream")
        return JSONResponse(message)


def _as_anthropic(reply: dict[str, Any]) -> dict[str, Any]:
    choice = reply["choices"][0]
    blocks: list[dict[str, Any]] = []
    if choice["message"].get("content"):
        blocks.append({"type": "text", "text": choice["message"]["content"]})
    for call in choice["message"].get("tool_calls") or []:
        arguments = json.loads(call["function"]["arguments"])
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": arguments})
    usage = reply.get("usage") or {}
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": blocks,
        "stop_reason": "tool_use" if choice["finish_reason"] == "tool_calls" else "end_turn",
        "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)},
    }


def _as_anthropic_stream(message: dict[str, Any]) -> Iterator[str]:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    yield event({"type": "message_start", "message": start})
    yield event({"type": "ping"})  # as Anthropic sends one after the start
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield event({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            for word in re.findall(r"\S+\s*", block["text"]):
                yield event(
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": word}}
                )
        else:
            yield event({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            arguments = json.dumps(block["input"])
            for part in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": part}
                yield event({"type": "content_block_delta", "index": index, "delta": delta})
        yield event({"type": "content_block_stop", "index": index})
    delta = {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]}, "usage": message["usage"]}
    yield event({**delta, "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    yield event({"type": "message_stop"})


def _as_stream(reply: dict[str, Any], include_usage: bool) -> Iterator[str]:
    """A scripted completion as OpenAI streams it: words of content, tool calls in fragments, usage last."""
    base = {key: reply[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = reply["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish}]})}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for word in re.findall(r"\S+\s*", message.get("content") or ""):
        yield chunk({"content": word})
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"]}}
        yield chunk({"tool_calls": [{**head, "function": {**head["function"], "arguments": arguments[:half]}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage and reply.get("usage"):
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': reply['usage']})}\n\n"
    yield "data: [DONE]\n\n"
