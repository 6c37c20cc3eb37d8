"""Upstreams that echo the key they were sent, over real sockets, plain and streamed: the key never reaches the client,
the SDK or a log."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

from tests.support import chat_body
from tests.unit.test_redaction import EXTRA, KEY, MCP_TOKEN, keyed_config

SECRETS = (KEY, EXTRA, MCP_TOKEN)
CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


class EchoingUpstream:
    """Answers every request with an error that quotes its Authorization and org headers: as HTTP 401 before any
    byte, or (`mid_stream`) as an error event after a first chunk."""

    def __init__(self) -> None:
        self.mid_stream = False
        self.server: asyncio.Server | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            headers = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if ": " in line)
            headers = {name.lower(): value for name, value in headers.items()}
            body = json.loads(await reader.readexactly(int(headers["content-length"])))
            echo = f"Incorrect API key: you sent {headers['authorization']} (org {headers.get('x-org', '-')})"
            error = json.dumps({"error": {"message": echo, "type": "invalid_request_error", "param": KEY}})
            if body.get("stream") and self.mid_stream:
                first = {**CHUNK, "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}
                text = f"data: {json.dumps(first)}\n\ndata: {error}\n\n".encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
                writer.write(b"content-length: %d\r\n\r\n" % len(text))
                writer.write(text)
            else:
                data = error.encode()
                writer.write(b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n")
                writer.write(b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(data), data))
            await writer.drain()
        finally:
            writer.close()


@pytest.fixture
async def echoing() -> AsyncIterator[tuple[EchoingUpstream, str]]:
    upstream = EchoingUpstream()
    upstream.server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
    yield upstream, f"http://127.0.0.1:{upstream.server.sockets[0].getsockname()[1]}/v1"
    upstream.server.close()


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


@pytest.mark.parametrize("mid_stream", [False, True])
@pytest.mark.parametrize("stream", [False, True])
async def test_an_upstream_that_echoes_the_key_never_shows_it(
    echoing: tuple[EchoingUpstream, str],
    gateway_factory: Any,
    caplog: pytest.LogCaptureFixture,
    stream: bool,
    mid_stream: bool,
) -> None:
    if mid_stream and not stream:
        pytest.skip("a plain request has no stream")
    upstream, url = echoing
    upstream.mid_stream = mid_stream
    caplog.set_level(logging.DEBUG)
    client, _ = await gateway_factory(keyed_config(url), targets={})
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=stream))
    assert response.status_code == (200 if mid_stream else 401)
    error = json.loads(response.text.split("data: ")[-1]) if mid_stream else response.json()
    message = error["error"]["message"]
    assert "you sent Bearer [redacted] (org [redacted])" in message, message
    assert error["error"]["param"] == "[redacted]"
    assert _leaks(response.text) == [] and _leaks(caplog.text) == []


async def test_the_sdk_sees_the_error_without_the_key(
    echoing: tuple[EchoingUpstream, str], gateway_factory: Any
) -> None:
    _, url = echoing
    http, _ = await gateway_factory(keyed_config(url), targets={})
    client = openai.AsyncOpenAI(base_url="http://gw/v1", api_key="unused", http_client=http, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        await client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "x"}])
    assert KEY not in str(caught.value) and "[redacted]" in str(caught.value)
