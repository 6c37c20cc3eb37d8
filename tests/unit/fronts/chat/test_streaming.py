"""`stream: true` through the loop, against a respx upstream that streams SSE."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastmcp import FastMCP

from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.server.app import create_app
from tests.support import (
    FIRST_CHUNK,
    Upstream,
    chat_body,
    completion,
    content_of,
    events,
    finish_reasons,
    make_config,
    sse_reply,
)


async def test_content_only_stream_is_forwarded_in_chunks(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(sse_reply(["Hel", "lo", " there"]))
    response = await client.post("/v1/chat/completions", json=chat_body("hi", stream=True))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    items = events(response.text)
    assert items[-1] == "[DONE]"
    chunks = items[:-1]
    assert len({(c["id"], c["model"], c["created"]) for c in chunks}) == 1
    assert chunks[0]["model"] == "up-model" and chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert content_of(chunks) == "Hello there"
    assert len([c for c in chunks if c["choices"][0]["delta"].get("content")]) == 3
    assert finish_reasons(chunks) == ["stop"]
    assert all(c["choices"][0]["index"] == 0 for c in chunks)
    sent = upstream.requests[0]
    assert sent["stream"] is True


async def test_usage_is_asked_of_every_stream_and_shown_only_to_a_client_that_asked(
    upstream: Upstream, gateway_factory: Any
) -> None:
    """The day's token budget needs every stream's usage: the gateway asks for it upstream, and a client that did
    not ask (or said no) gets no usage chunk it did not expect."""
    client, _ = await gateway_factory()
    asked: list[list[Any]] = []
    for options in (None, {"include_usage": False}, {"include_usage": True}):
        upstream.script(sse_reply(["Hello"], usage=(10, 5)))
        extra = {"stream_options": options} if options is not None else {}
        asked.append(
            events((await client.post("/v1/chat/completions", json=chat_body("hi", stream=True, **extra))).text)
        )
    assert [sent["stream_options"] for sent in upstream.requests] == [{"include_usage": True}] * 3
    usage = [[chunk["usage"] for chunk in items[:-1] if chunk.get("usage")] for items in asked]
    assert usage == [[], [], [{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}]]
    assert all(content_of(items[:-1]) == "Hello" for items in asked)


async def test_an_upstream_that_refuses_stream_options_is_not_sent_them(
    upstream: Upstream, gateway_factory: Any
) -> None:
    """`stream_usage: false` leaves the option out of every stream, even one whose client asked for usage: an
    upstream that refuses it would fail every stream otherwise."""
    provider = {"base_url": "http://upstream.test/v1", "api_key": "sk-test-secret", "max_retries": 0}
    config = make_config(providers={"up": {**provider, "stream_usage": False}})
    client, _ = await gateway_factory(config)
    for options in (None, {"include_usage": True}):
        upstream.script(sse_reply(["Hello"]))
        extra = {"stream_options": options} if options is not None else {}
        response = await client.post("/v1/chat/completions", json=chat_body("hi", stream=True, **extra))
        assert content_of(events(response.text)[:-1]) == "Hello"
    assert ["stream_options" in sent for sent in upstream.requests] == [False, False]


async def test_search_then_mcp_call_then_answer_streams_the_same_text(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    rounds = [
        (
            sse_reply(calls=[("search_tools", {"query": "convert currency"})], usage=(100, 10), fragment=3),
            completion(calls=[("search_tools", {"query": "convert currency"})], usage=(100, 10)),
        ),
        (
            sse_reply(
                calls=[("finance__convert_currency", {"amount": 100, "from_currency": "USD", "to_currency": "EUR"})],
                usage=(200, 20),
            ),
            completion(
                calls=[("finance__convert_currency", {"amount": 100, "from_currency": "USD", "to_currency": "EUR"})],
                usage=(200, 20),
            ),
        ),
        (
            sse_reply(["100 USD ", "is about ", "92 EUR."], usage=(300, 30)),
            completion("100 USD is about 92 EUR.", usage=(300, 30)),
        ),
    ]
    upstream.script(*(streamed for streamed, _ in rounds))
    body = chat_body("100 USD in EUR?", stream=True, stream_options={"include_usage": True})
    items = events((await client.post("/v1/chat/completions", json=body)).text)
    streamed_requests = list(upstream.requests)
    upstream.script(*(plain for _, plain in rounds))
    plain = (await client.post("/v1/chat/completions", json=chat_body("100 USD in EUR?"))).json()

    assert content_of(items) == plain["choices"][0]["message"]["content"] == "100 USD is about 92 EUR."
    assert not any("tool_calls" in c["choices"][0]["delta"] for c in items if isinstance(c, dict) and c.get("choices"))
    assert finish_reasons(items) == ["stop"]
    usage_chunk = items[-2]
    assert usage_chunk["choices"] == []
    assert (
        usage_chunk["usage"] == {"prompt_tokens": 600, "completion_tokens": 60, "total_tokens": 660} == plain["usage"]
    )
    assert usage_chunk["tool_discovery"]["tools_called"] == ["finance__convert_currency"]
    assert usage_chunk["tool_discovery"]["rounds"] == 3
    assert streamed_requests[0]["stream_options"] == {"include_usage": True}
    assert [m["role"] for m in streamed_requests[2]["messages"]] == [
        m["role"] for m in upstream.requests[2]["messages"]
    ]
    call = streamed_requests[1]["messages"][1]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"query": "convert currency"}, "fragments were joined"


async def test_parallel_tool_calls_interleaved_over_deltas(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        sse_reply(
            calls=[("weather__get_current_weather", {"city": "Paris"}), ("weather__get_alerts", {"region": "Europe"})],
            interleave=True,
            fragment=2,
        ),
        sse_reply(["done"]),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert content_of(events(response.text)) == "done"
    results = upstream.requests[1]["messages"][-2:]
    assert [r["tool_call_id"] for r in results] == ["call_0", "call_1"]
    assert "Paris" in results[0]["content"] and not results[1]["content"].startswith("Error: the arguments")


async def test_content_before_tool_calls_streams_with_a_separator(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        sse_reply(["Let me check."], calls=[("weather__get_alerts", {"region": "EU"})]),
        sse_reply(["No alerts."]),
    )
    items = events((await client.post("/v1/chat/completions", json=chat_body("x", stream=True))).text)
    assert content_of(items) == "Let me check.\n\nNo alerts."
    assert upstream.requests[1]["messages"][1]["content"] == "Let me check."


async def test_client_tool_calls_stream_to_the_client(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    tool = {"type": "function", "function": {"name": "open_ticket", "parameters": {"type": "object"}}}
    upstream.script(sse_reply(calls=[("open_ticket", {"summary": "refund please"})], fragment=5))
    items = events((await client.post("/v1/chat/completions", json=chat_body("x", stream=True, tools=[tool]))).text)
    deltas = [
        d for i in items if isinstance(i, dict) for c in i.get("choices", []) for d in c["delta"].get("tool_calls", [])
    ]
    assert [(d["index"], d["id"], d["function"]["name"]) for d in deltas] == [(0, "call_0", "open_ticket")]
    assert json.loads(deltas[0]["function"]["arguments"]) == {"summary": "refund please"}
    assert finish_reasons(items) == ["tool_calls"]
    assert items[-1] == "[DONE]"


async def test_error_before_first_byte_keeps_http_status(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(httpx.Response(429, json={"error": {"message": "slow down", "code": "rate_limit_exceeded"}}))
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert response.status_code == 429 and response.json()["error"]["code"] == "rate_limit_exceeded"
    upstream.script(httpx.ConnectError("refused"))
    assert (await client.post("/v1/chat/completions", json=chat_body("x", stream=True))).status_code == 502


async def test_upstream_failure_mid_stream_ends_with_an_error_event(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        sse_reply(calls=[("search_tools", {"query": "notes"})]),
        httpx.Response(503, json={"error": {"message": "overloaded"}}),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert response.status_code == 200
    items = events(response.text)
    assert "overloaded" in items[-1]["error"]["message"] and "[DONE]" not in items
    assert response.text.endswith("\n\n")

    broken = FIRST_CHUNK.replace(b'"a"', b'"hi"') + b'data: {"choices": [tru\n\n'
    upstream.script(httpx.Response(200, headers={"content-type": "text/event-stream"}, content=broken))
    items = events((await client.post("/v1/chat/completions", json=chat_body("x", stream=True))).text)
    assert content_of(items) == "hi" and items[-1]["error"]["code"] == "upstream_invalid_response"


async def test_round_limit_in_a_stream(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(max_rounds=2))
    upstream.script(*[sse_reply(calls=[("weather__get_alerts", {"region": "EU"})]) for _ in range(3)])
    items = events((await client.post("/v1/chat/completions", json=chat_body("x", stream=True))).text)
    assert "round limit" in content_of(items) and finish_reasons(items) == ["length"]
    assert len(upstream.requests) == 2


def _chat_scope() -> dict[str, Any]:
    """An ASGI scope for POST /v1/chat/completions, to drive the app with a hand-made receive/send."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json")],
        "client": ("t", 1),
        "server": ("t", 80),
    }


def _slow_server(started: asyncio.Event, cancelled: asyncio.Event, seconds: float) -> FastMCP:
    server = FastMCP("slow")

    @server.tool
    async def crunch(size: int) -> str:
        """Crunch numbers for a while."""
        started.set()
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return f"crunched {size}"

    return server


async def test_keepalive_comments_while_tools_run(upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(mcpServers={"slow": {"command": "unused"}}, tool_sets={}, stream_keepalive_seconds=0.05)
    client, _ = await gateway_factory(config, targets={"slow": _slow_server(asyncio.Event(), asyncio.Event(), 0.3)})
    upstream.script(sse_reply(calls=[("slow__crunch", {"size": 3})]), sse_reply(["ok"]))
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert response.text.count(": keep-alive\n\n") >= 2
    assert content_of(events(response.text)) == "ok"


async def test_client_disconnect_cancels_the_pending_mcp_call(upstream: Upstream) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    config = make_config(mcpServers={"slow": {"command": "unused"}}, tool_sets={}, stream_keepalive_seconds=30)
    gateway = Gateway(config, mcp_targets={"slow": _slow_server(started, cancelled, 30)})
    await gateway.start()
    upstream.script(sse_reply(calls=[("slow__crunch", {"size": 3})]), sse_reply(["never"]))
    try:
        sent: list[dict[str, Any]] = []
        body = json.dumps(chat_body("x", stream=True)).encode()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await started.wait()  # the client hangs up while the tool is running
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = _chat_scope()
        await asyncio.wait_for(create_app(Engine(gateway))(scope, receive, send), 10)
        await asyncio.wait_for(cancelled.wait(), 5)
        assert sent[0]["status"] == 200
        assert len(upstream.requests) == 1, "no further upstream round after the disconnect"
    finally:
        await gateway.stop()


async def test_disconnect_cancels_a_slow_upstream(upstream: Upstream, gateway_factory: Any) -> None:
    closed = asyncio.Event()

    class SlowStream(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield FIRST_CHUNK
            await asyncio.sleep(30)
            yield b"data: [DONE]\n\n"

        async def aclose(self) -> None:
            closed.set()

    _, gateway = await gateway_factory()
    upstream.script(httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=SlowStream()))
    app = create_app(Engine(gateway))
    got_first = asyncio.Event()
    body = json.dumps(chat_body("x", stream=True)).encode()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await got_first.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and b'"a"' in message.get("body", b""):
            got_first.set()

    scope = _chat_scope()
    await asyncio.wait_for(app(scope, receive, send), 10)
    await asyncio.wait_for(closed.wait(), 5)


async def test_an_endless_upstream_stream_ends_at_the_request_deadline(
    upstream: Upstream, gateway_factory: Any
) -> None:
    class Endless(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            while True:
                yield FIRST_CHUNK
                await asyncio.sleep(0.01)

    client, _ = await gateway_factory(make_config(request_deadline=0.5))
    upstream.script(httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Endless()))
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    items = events(response.text)
    assert content_of(items).startswith("aaa")
    assert items[-1]["error"]["code"] == "request_deadline"
