"""A loopback TCP upstream that speaks raw bytes, so a test can break HTTP in ways no framework would."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from tests.support.upstream import completion

Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


class RawUpstream:
    """A loopback TCP server; each connection runs the current behaviour on the raw bytes."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = answer_ok
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.behaviour(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"


async def read_request(reader: asyncio.StreamReader) -> dict[str, Any]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    return dict(json.loads(await reader.readexactly(length)))


async def answer_ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Plain keep-alive answers, JSON or SSE as asked, until the client closes."""
    while True:
        request = await read_request(reader)
        if request.get("stream"):
            chunk = {**CHUNK, "choices": [{"index": 0, "delta": {"content": "fine"}, "finish_reason": "stop"}]}
            body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        else:
            body = json.dumps(completion("fine")).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
        writer.write(b"content-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()


async def serve_raw(behaviour: Behaviour | None = None, tls: ssl.SSLContext | None = None) -> RawUpstream:
    """A RawUpstream listening on a free loopback port (over TLS with `tls`)."""
    upstream = RawUpstream()
    upstream.behaviour = behaviour or answer_ok
    upstream.server = await asyncio.start_server(upstream._serve, "127.0.0.1", 0, ssl=tls)
    return upstream
