"""A scripted upstream that speaks OpenAI's Responses API: `response` objects built from output items, streamed in
OpenAI's documented event sequence, served by uvicorn in a thread (`ScriptedResponses`) or in memory by respx
(`scripted_responses`). Each records every request body it was sent.

The stream: `response.created`, `response.in_progress`, then per output item `response.output_item.added`, its
own events (a reasoning summary's `reasoning_summary_part.added`, `reasoning_summary_text.delta`s, `.done`s; a
message's `content_part.added`, `output_text.delta`s, `.done`s; a call's `function_call_arguments.delta`s or
`custom_tool_call_input.delta`s and `.done`; a web search's `web_search_call.in_progress`, `.searching`,
`.completed`) and `response.output_item.done`; then `response.completed` (or `response.incomplete`). A failure
is `error` then `response.failed`. Every event has its `sequence_number`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import respx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.cache_upstream import Refused, read_responses
from tests.support.scripted import free_port

RESPONSES_UPSTREAM = "http://responses.test/v1"
_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_up{next(_ids):06d}"


def reasoning(*summary: str, encrypted: str | None = None) -> dict[str, Any]:
    """A reasoning item; `encrypted` is its `encrypted_content` (given when the request included it)."""
    item: dict[str, Any] = {"id": _id("rs"), "type": "reasoning",
                            "summary": [{"type": "summary_text", "text": text} for text in summary]}  # fmt: skip
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def message(text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"id": _id("msg"), "type": "message", "status": "completed", "role": "assistant", "content": [part]}


def function_call(name: str, arguments: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    item = {"id": _id("fc"), "type": "function_call", "status": "completed", "call_id": _id("call"), "name": name,
            "arguments": json.dumps(arguments)}  # fmt: skip
    return {**item, "namespace": namespace} if namespace else item


def custom_call(name: str, text: str) -> dict[str, Any]:
    return {"id": _id("ctc"), "type": "custom_tool_call", "status": "completed", "call_id": _id("call"),
            "name": name, "input": text}  # fmt: skip


def web_search(query: str) -> dict[str, Any]:
    action = {"type": "search", "query": query, "sources": [{"type": "url", "url": "https://example.com"}]}
    return {"id": _id("ws"), "type": "web_search_call", "status": "completed", "action": action}


def response(
    *output: dict[str, Any], usage: tuple[int, int] = (10, 5), incomplete: str | None = None
) -> dict[str, Any]:
    """A finished `response` with `output`; `incomplete`: the reason it stopped short (`max_output_tokens`)."""
    return {
        "id": _id("resp"),
        "object": "response",
        "created_at": 1700000000,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "model": "gpt-5-upstream",
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 1},
            "total_tokens": sum(usage),
        },
    }


def _added(item: dict[str, Any]) -> dict[str, Any]:
    """An item as `response.output_item.added` shows it: begun, nothing in it yet."""
    kind = item["type"]
    if kind == "reasoning":
        return {**item, "summary": []}
    if kind == "message":
        return {**item, "status": "in_progress", "content": []}
    if kind == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    if kind == "custom_tool_call":
        return {**item, "status": "in_progress", "input": ""}
    return {**item, "status": "in_progress", "action": {"type": "search"}}


def _item_events(item: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """The events between an item's opening and its end."""
    where = {"item_id": item["id"], "output_index": index}
    kind, out = item["type"], []
    if kind == "reasoning":
        for number, part in enumerate(item["summary"]):
            at = {**where, "summary_index": number}
            out.append({"type": "response.reasoning_summary_part.added", **at, "part": {**part, "text": ""}})
            out += [{"type": "response.reasoning_summary_text.delta", **at, "delta": word}
                    for word in re.findall(r"\S+\s*", part["text"])]  # fmt: skip
            out.append({"type": "response.reasoning_summary_text.done", **at, "text": part["text"]})
            out.append({"type": "response.reasoning_summary_part.done", **at, "part": part})
    elif kind == "message":
        for number, part in enumerate(item["content"]):  # each part's text (or refusal) a word at a time
            at, field = {**where, "content_index": number}, "text" if part["type"] == "output_text" else "refusal"
            name, logprobs = ("response.output_text", {"logprobs": []}) if field == "text" else ("response.refusal", {})
            out.append({"type": "response.content_part.added", **at, "part": {**part, field: ""}})
            out += [{"type": f"{name}.delta", **at, "delta": word, **logprobs}
                    for word in re.findall(r"\S+\s*|^\s+", part[field])]  # fmt: skip
            out.append({"type": f"{name}.done", **at, field: part[field], **logprobs})
            out.append({"type": "response.content_part.done", **at, "part": part})
    elif kind == "function_call":
        text, half = item["arguments"], len(item["arguments"]) // 2
        out += [{"type": "response.function_call_arguments.delta", **where, "delta": piece}
                for piece in (text[:half], text[half:])]  # fmt: skip
        out.append({"type": "response.function_call_arguments.done", **where, "arguments": text,
                    "name": item["name"]})  # fmt: skip
    elif kind == "custom_tool_call":
        out.append({"type": "response.custom_tool_call_input.delta", **where, "delta": item["input"]})
        out.append({"type": "response.custom_tool_call_input.done", **where, "input": item["input"]})
    else:
        out += [{"type": f"response.web_search_call.{step}", **where} for step in ("in_progress", "searching",
                                                                                   "completed")]  # fmt: skip
    return out


def stream_events(finished: dict[str, Any]) -> list[dict[str, Any]]:
    """A `response` as OpenAI streams it."""
    begun = {**finished, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": begun},
        {"type": "response.in_progress", "response": begun},
    ]
    for index, item in enumerate(finished["output"]):
        events.append({"type": "response.output_item.added", "output_index": index, "item": _added(item)})
        events += _item_events(item, index)
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    end = "response.incomplete" if finished["status"] == "incomplete" else "response.completed"
    events.append({"type": end, "response": finished})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def failed_events(code: str, text: str) -> list[dict[str, Any]]:
    """A stream that fails after it began: `error`, then `response.failed`."""
    begun = {**response(), "status": "in_progress", "output": [], "usage": None}
    failed = {**begun, "status": "failed", "error": {"code": code, "message": text}}
    events = [
        {"type": "response.created", "response": begun},
        {"type": "error", "code": code, "message": text, "param": None},
        {"type": "response.failed", "response": failed},
    ]
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events).encode()


Reply = dict[str, Any] | list[dict[str, Any]] | tuple[int, dict[str, Any]]


def answer(body: dict[str, Any], reply: Reply | None) -> tuple[int, str, bytes]:
    """Status, content type and bytes for `reply`: a `response` (streamed when the request asked), a list of
    stream events as they are, or (status, error body)."""
    try:
        read_responses(body)  # what the real API refuses, refused: an output without its call
    except Refused as exc:
        reply = (400, {"error": {"message": str(exc), "type": "invalid_request_error", "param": "input"}})
    if reply is None:
        reply = (500, {"error": {"message": "script exhausted", "type": "server_error"}})
    if isinstance(reply, tuple):
        return reply[0], "application/json", json.dumps(reply[1]).encode()
    if isinstance(reply, list):
        return 200, "text/event-stream", sse(reply)
    if body.get("stream"):
        return 200, "text/event-stream", sse(stream_events(reply))
    return 200, "application/json", json.dumps(reply).encode()


class ScriptedResponses:
    """The Responses upstream served by uvicorn in a thread, at `base_url` + `/responses`."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.port = free_port()
        app = Starlette(routes=[Route("/v1/responses", self._respond, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedResponses:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("scripted Responses upstream did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies = list(replies)
            self.requests.clear()

    async def _respond(self, request: Request) -> Response:
        body = json.loads(await request.body())
        with self._lock:
            self.requests.append(body)
            reply = self.replies.pop(0) if self.replies else None
        status, kind, content = answer(body, reply)
        return Response(content, status_code=status, media_type=kind)


def scripted_responses(router: respx.MockRouter) -> tuple[list[dict[str, Any]], list[Reply]]:
    """The Responses upstream in memory on `router`: the bodies it received and the replies it gives, in order."""
    sent: list[dict[str, Any]] = []
    replies: list[Reply] = []

    def respond(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        status, kind, content = answer(body, replies.pop(0) if replies else None)
        return httpx.Response(status, headers={"content-type": kind}, content=content)

    router.post(f"{RESPONSES_UPSTREAM}/responses").mock(side_effect=respond)
    return sent, replies


RESPONSES_PROVIDER = {"type": "openai_responses", "base_url": RESPONSES_UPSTREAM, "api_key": "sk-resp-test",
                      "max_retries": 0}  # fmt: skip


@contextlib.asynccontextmanager
async def codex_gateway(gateway_factory: Any) -> AsyncIterator[tuple[Any, list[dict[str, Any]], list[Any]]]:
    """A gateway whose model `codex` is a Responses upstream scripted in memory: yields (its client, the bodies
    the upstream got, the replies to push)."""
    from app.config import parse_config
    from tests.support.upstream import mock_upstreams

    config = parse_config(
        {"providers": {"resp": RESPONSES_PROVIDER}, "models": {"codex": {"provider": "resp", "model": "gpt-5-codex"}},
         "tool_discovery": {"semantic": {"enabled": False}}},
        environ={},
    )  # fmt: skip
    with mock_upstreams() as router:
        sent, replies = scripted_responses(router)
        client, _ = await gateway_factory(config, targets={})
        yield client, sent, replies
