"""Every byte an upstream streams counts against `max_response_bytes`: a giant stream, or one endless line, ends
with an error event in the front's own format instead of reaching the client (and memory) whole; the next request
through the same gateway works."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support import chat_body, make_config
from tests.support.raw import CHUNK, RawUpstream, answer_ok, read_request, serve_raw

BOUND = 64 * 1024


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def giant_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Well-formed chunks, far past the bound in all; the first one alone, so the answer has begun streaming."""
    await read_request(reader)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    chunk = {**CHUNK, "choices": [{"index": 0, "delta": {"content": "x" * 1000}, "finish_reason": None}]}
    event = f"data: {json.dumps(chunk)}\n\n".encode()
    writer.write(_chunked(event))
    await writer.drain()
    await asyncio.sleep(0.2)
    for _ in range(40 * BOUND // len(event)):
        writer.write(_chunked(event))
        await writer.drain()


async def endless_line(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One line that never ends."""
    await read_request(reader)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    writer.write(_chunked(b'data: {"choices": [{"index": 0, "delta": {"content": "'))
    for _ in range(40 * BOUND // 8192):
        writer.write(_chunked(b"y" * 8192))
        await writer.drain()


@pytest.fixture
async def raw_upstream() -> AsyncIterator[RawUpstream]:
    upstream = await serve_raw()
    yield upstream
    upstream.close()


async def gateway(raw_upstream: RawUpstream, gateway_factory: Any) -> Any:
    provider = {"base_url": raw_upstream.url, "api_key": "sk-test", "max_retries": 0, "max_response_bytes": BOUND}
    config = make_config(providers={"up": provider}, mcpServers={}, tool_sets={})
    client, _ = await gateway_factory(config, targets={})
    return client


def data_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


def chat_error_code(response: Any) -> str:
    """Before anything was streamed (a first line that never ends) the error keeps its HTTP status; after, it is
    the stream's last event."""
    if response.status_code != 200:
        assert response.status_code == 502, response.text
        return str(response.json()["error"]["code"])
    return str(data_events(response.text)[-1]["error"]["code"])


@pytest.mark.parametrize("behaviour", [giant_stream, endless_line])
async def test_a_chat_stream_past_the_bound_ends_with_an_error(
    raw_upstream: RawUpstream, gateway_factory: Any, behaviour: Any
) -> None:
    client = await gateway(raw_upstream, gateway_factory)
    raw_upstream.behaviour = behaviour
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert chat_error_code(response) == "upstream_response_too_large"
    assert (response.status_code == 200) is (behaviour is giant_stream), "a stream under way ends with an event"
    assert len(response.content) < 2 * BOUND, "the client never got the stream whole"
    raw_upstream.behaviour = answer_ok
    again = await client.post("/v1/chat/completions", json=chat_body("again"))
    assert again.status_code == 200 and again.json()["choices"][0]["message"]["content"] == "fine"


async def test_a_responses_stream_past_the_bound_ends_with_its_failed_event(
    raw_upstream: RawUpstream, gateway_factory: Any
) -> None:
    client = await gateway(raw_upstream, gateway_factory)
    raw_upstream.behaviour = giant_stream
    response = await client.post("/v1/responses", json={"model": "fast", "input": "x", "stream": True})
    assert response.status_code == 200, "the answer had begun streaming"
    kinds = [event.get("type") for event in data_events(response.text)]
    assert kinds[-1] == "response.failed", kinds[-3:]
    assert "upstream_response_too_large" in response.text
    assert len(response.content) < 5 * BOUND, "the client never got the stream whole"
