"""A remote server's answer stream for one request is bounded as a whole, in bytes and in time: past either, that
request's stream ends with an error naming the bound (the SDK answers the request with it); the server's other
streams, and the connection, go on. A scripted transport stands in for the server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx2
import pytest

from app.config import parse_config
from app.config.loading import ConfigError
from app.mcp.client.http_bound import BoundedReads, CallBoundError

EVENT = b"event: message\ndata: " + b'{"jsonrpc": "2.0", "method": "notifications/message"}' + b"\n\n"


class Events(httpx2.AsyncByteStream):
    """`count` events, `pause` seconds apart."""

    def __init__(self, count: int, pause: float = 0.0) -> None:
        self.count, self.pause = count, pause

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.count):
            if self.pause:
                await asyncio.sleep(self.pause)
            yield EVENT


def scripted(count: int, pause: float = 0.0) -> httpx2.MockTransport:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Events(count, pause))

    return httpx2.MockTransport(answer)


async def read(bounds: BoundedReads, method: str = "POST") -> int:
    received = 0
    async with bounds.client() as client, client.stream(method, "http://server/mcp") as response:
        async for chunk in response.aiter_raw():
            received += len(chunk)
    return received


async def test_one_requests_answer_stream_past_max_call_bytes_fails_that_request() -> None:
    bounds = BoundedReads(65536, call_bytes=100_000, inner=scripted(10_000))
    with pytest.raises(CallBoundError, match=r"over 100,000 bytes for one request \(mcp_limits.max_call_bytes\)"):
        await read(bounds)
    assert bounds.closed_because is None, "the connection stays: only the request fails"
    assert await read(BoundedReads(65536, call_bytes=100_000, inner=scripted(100))) == 100 * len(EVENT)


async def test_one_requests_answer_stream_past_its_time_fails_that_request() -> None:
    bounds = BoundedReads(65536, call_seconds=0.05, inner=scripted(1000, pause=0.01))
    with pytest.raises(CallBoundError, match=r"outlasted 0.05s"):
        await read(bounds)
    assert bounds.closed_because is None


async def test_the_servers_own_stream_is_not_a_request_and_has_no_total() -> None:
    """The GET stream carries what the server sends unasked, for the connection's life: only its events are
    bounded (max_message_bytes)."""
    bounds = BoundedReads(65536, call_bytes=100_000, call_seconds=0.0, inner=scripted(10_000))
    assert await read(bounds, "GET") == 10_000 * len(EVENT)


def test_a_call_bound_below_the_message_bound_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"max_call_bytes .* is below max_message_bytes"):
        parse_config({"mcp_limits": {"max_message_bytes": 100_000_000}}, environ={})
    limits = parse_config({"mcp_limits": {"max_message_bytes": 100_000_000, "max_call_bytes": 10**8}}, environ={})
    assert limits.mcp_limits.max_call_bytes == 10**8
