"""Upstream faults over real sockets: a loopback server that resets, answers garbage, cuts a stream, streams
forever, drips its headers, or closes idle keep-alive connections. Each fault ends in a clear OpenAI-shaped
answer within its deadline, and the next request through the same gateway succeeds."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support import chat_body, completion, make_config
from tests.support.raw import CHUNK, Behaviour, RawUpstream, answer_ok, read_request, serve_raw


async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    writer.transport.abort()


async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    writer.write(b"\x00\xffNOT HTTP AT ALL\r\n\r\n")
    await writer.drain()
    await asyncio.sleep(0.2)


async def bad_json(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    writer.write(
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 9\r\n\r\n{not json"
    )
    await writer.drain()


def start_event_stream(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")


async def write_event(writer: asyncio.StreamWriter, content: str, finish: str | None = None) -> None:
    """One chat-completion chunk as an SSE event in one HTTP chunk."""
    chunk = {**CHUNK, "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}
    event = f"data: {json.dumps(chunk)}\n\n".encode()
    writer.write(b"%x\r\n%s\r\n" % (len(event), event))
    await writer.drain()


async def cut_mid_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    start_event_stream(writer)
    await write_event(writer, "partial")
    await asyncio.sleep(0.05)  # then close without the last chunk


async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    start_event_stream(writer)
    while True:
        await write_event(writer, "a")
        await asyncio.sleep(0.01)


async def stall_mid_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    start_event_stream(writer)
    await write_event(writer, "partial")
    await asyncio.sleep(30)  # then nothing, with the connection open


async def slow_but_steady(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Five chunks 0.5 s apart: 2.5 s in all, longer than a 1 s read timeout, but never 1 s without data."""
    await read_request(reader)
    start_event_stream(writer)
    for finish in [None, None, None, None, "stop"]:
        await write_event(writer, "a", finish)
        await asyncio.sleep(0.5)
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    await read_request(reader)


async def slow_loris(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    for byte in b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-padding: " + b"z" * 1000:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.05)


@pytest.fixture
async def raw_upstream() -> AsyncIterator[RawUpstream]:
    upstream = await serve_raw()
    yield upstream
    upstream.close()


async def _gateway(raw_upstream: RawUpstream, gateway_factory: Any, **extra: Any) -> Any:
    provider = {"base_url": raw_upstream.url, "api_key": "sk-test", "max_retries": 0, "read_timeout": 1.0}
    config = make_config(providers={"up": provider}, mcpServers={}, tool_sets={}, **extra)
    client, _ = await gateway_factory(config, targets={})
    return client


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


def _content(events: list[dict[str, Any]]) -> str:
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))


async def _ok_afterwards(client: Any, raw_upstream: RawUpstream) -> None:
    raw_upstream.behaviour = answer_ok
    response = await client.post("/v1/chat/completions", json=chat_body("again"))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "fine"


@pytest.mark.parametrize(
    ("behaviour", "status", "code", "words"),
    [
        (reset, 502, "upstream_connection_error", "closed the connection"),
        (garbage, 502, "upstream_connection_error", "malformed"),
        (bad_json, 502, "upstream_invalid_response", "not a json object"),
        (slow_loris, 504, "upstream_timeout", "timed out"),
    ],
)
async def test_a_broken_answer_is_a_clear_error_and_the_next_request_works(
    raw_upstream: RawUpstream, gateway_factory: Any, behaviour: Behaviour, status: int, code: str, words: str
) -> None:
    client = await _gateway(raw_upstream, gateway_factory)
    raw_upstream.behaviour = behaviour
    response = await asyncio.wait_for(client.post("/v1/chat/completions", json=chat_body("x")), 30)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and words in error["message"].lower(), error
    await _ok_afterwards(client, raw_upstream)


async def test_a_stream_cut_mid_way_ends_with_an_error_event(raw_upstream: RawUpstream, gateway_factory: Any) -> None:
    client = await _gateway(raw_upstream, gateway_factory)
    raw_upstream.behaviour = cut_mid_stream
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    events = _events(response.text)
    assert _content(events) == "partial"
    assert "closed the connection" in events[-1]["error"]["message"].lower()
    await _ok_afterwards(client, raw_upstream)


async def test_a_stream_that_stalls_ends_at_the_read_timeout(raw_upstream: RawUpstream, gateway_factory: Any) -> None:
    client = await _gateway(raw_upstream, gateway_factory)  # read_timeout 1 s
    raw_upstream.behaviour = stall_mid_stream
    response = await asyncio.wait_for(client.post("/v1/chat/completions", json=chat_body("x", stream=True)), 30)
    events = _events(response.text)
    assert _content(events) == "partial" and events[-1]["error"]["code"] == "upstream_timeout"
    await _ok_afterwards(client, raw_upstream)


async def test_a_slow_but_steady_stream_is_not_cut(raw_upstream: RawUpstream, gateway_factory: Any) -> None:
    client = await _gateway(raw_upstream, gateway_factory)  # read_timeout 1 s
    raw_upstream.behaviour = slow_but_steady
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    events = _events(response.text)
    assert _content(events) == "aaaaa" and "error" not in events[-1], events[-1]


async def test_an_endless_stream_ends_at_the_request_deadline(raw_upstream: RawUpstream, gateway_factory: Any) -> None:
    client = await _gateway(raw_upstream, gateway_factory, request_deadline=1.0)
    raw_upstream.behaviour = endless
    response = await asyncio.wait_for(client.post("/v1/chat/completions", json=chat_body("x", stream=True)), 30)
    events = _events(response.text)
    assert _content(events).startswith("aaa")
    assert events[-1]["error"]["code"] == "request_deadline"
    await _ok_afterwards(client, raw_upstream)


async def test_sequential_requests_share_one_keep_alive_connection(
    raw_upstream: RawUpstream, gateway_factory: Any
) -> None:
    client = await _gateway(raw_upstream, gateway_factory)
    for _ in range(5):
        await _ok_afterwards(client, raw_upstream)
    assert raw_upstream.connections == 1


async def test_a_post_that_was_read_is_never_resent_beyond_the_retry_policy(
    raw_upstream: RawUpstream, gateway_factory: Any
) -> None:
    """The upstream reads the whole POST, then closes without a byte of answer: it may have run (and billed) the
    call, so only the provider's retry policy may send it again; the transport never does, reused connection or
    not."""
    received = 0

    async def answer_once_then_swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal received
        await read_request(reader)
        received += 1
        if received == 1:  # one good answer, so that the next request goes out on a reused connection
            body = json.dumps(completion("fine")).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
            await read_request(reader)
            received += 1

    raw_upstream.behaviour = answer_once_then_swallow
    for retries in (0, 2):
        received = 0
        provider = {"base_url": raw_upstream.url, "api_key": "k", "max_retries": retries, "retry_base_delay": 0}
        client, _ = await gateway_factory(make_config(providers={"up": provider}, mcpServers={}, tool_sets={}), {})
        assert (await client.post("/v1/chat/completions", json=chat_body("x"))).status_code == 200
        response = await client.post("/v1/chat/completions", json=chat_body("x"))
        assert response.status_code == 502, response.text
        assert response.json()["error"]["code"] == "upstream_connection_error"
        assert "closed the connection without answering" in response.json()["error"]["message"]
        assert received == 1 + (1 + retries), f"one request per attempt with max_retries={retries}"


async def test_an_idle_connection_the_server_closed_is_replaced_unseen(
    raw_upstream: RawUpstream, gateway_factory: Any
) -> None:
    async def close_when_idle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer once with keep-alive headers, then close the idle connection: a server's keep-alive timeout."""
        await read_request(reader)
        body = json.dumps(completion("fine")).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        await asyncio.sleep(0.05)

    raw_upstream.behaviour = close_when_idle
    client = await _gateway(raw_upstream, gateway_factory)
    for _ in range(3):
        response = await client.post("/v1/chat/completions", json=chat_body("x"))
        assert response.status_code == 200, response.text
        await asyncio.sleep(0.4)  # well after the server closed it
    assert raw_upstream.connections == 3


async def test_an_idle_connection_that_received_bytes_is_not_reused(
    raw_upstream: RawUpstream, gateway_factory: Any
) -> None:
    async def stray_408(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer, then send an unsolicited 408 on the idle connection and keep it open."""
        while True:
            await read_request(reader)
            body = json.dumps(completion(f"answer on connection {raw_upstream.connections}")).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()

    raw_upstream.behaviour = stray_408
    client = await _gateway(raw_upstream, gateway_factory)
    for number in (1, 2, 3):
        response = await client.post("/v1/chat/completions", json=chat_body("x"))
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == f"answer on connection {number}"
        await asyncio.sleep(0.4)  # well after the stray 408 arrived


async def big_chunked_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    body = json.dumps(completion("x" * 3_000_000)).encode()
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
    for start in range(0, len(body), 65536):
        piece = body[start : start + 65536]
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    await read_request(reader)


async def test_a_large_chunked_answer_arrives_whole(raw_upstream: RawUpstream, gateway_factory: Any) -> None:
    raw_upstream.behaviour = big_chunked_answer
    client = await _gateway(raw_upstream, gateway_factory)
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "x" * 3_000_000
