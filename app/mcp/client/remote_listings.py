"""A remote server's tool listings, checked off the event loop, as a stdio server's are (app/mcp/client/pipe.py).

Under the MCP SDK's HTTP client, the answer to a `tools/list` request (a JSON body, or an event on a stream) is
taken apart before the SDK sees it: when it is large, it is parsed in the worker pool a piece at a time, its tools
validated there and kept here, and the SDK gets the same answer without its tools. Every other answer and event
passes as it came.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from mcp.shared.message import SessionMessage

from app.mcp.client.large_messages import LISTING_LINE_BYTES, Listings


class RemoteListings(Listings):
    """A remote client's listings: requests seen as the bodies it sends, answers as bodies or stream events."""

    def sent(self, body: bytes) -> None:
        """Note a request body that asks for `tools/list` (a JSON-RPC request, or a batch of them)."""
        if b"tools/list" not in body:
            return
        try:
            found = json.loads(body)
        except ValueError:
            return
        for request in found if isinstance(found, list) else [found]:
            if isinstance(request, dict) and request.get("method") == "tools/list":
                self.asked(request.get("id"))

    async def answer(self, data: bytes) -> bytes:
        """`data` (one JSON-RPC message) as the SDK should get it: a large listing without its tools."""
        if len(data) <= LISTING_LINE_BYTES or not self.pending:
            return data
        parsed = await self.parse(data)
        if parsed.tools is None or not isinstance(parsed.message, SessionMessage):
            return data  # as it came: no listing taken apart
        return parsed.message.message.model_dump_json(by_alias=True, exclude_unset=True).encode()

    async def json_body(self, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """A JSON answer, whole (its size is bounded below), passed through `answer`."""
        body = b"".join([chunk async for chunk in stream])
        yield await self.answer(body)

    async def events(self, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """An event stream, event by event, each event's data passed through `answer`."""
        buffer = bytearray()
        async for chunk in stream:
            start = max(0, len(buffer) - 3)  # a blank line may straddle two chunks
            buffer += chunk
            while (end := _boundary(buffer, start)) is not None:
                event = bytes(buffer[: end[1]])
                del buffer[: end[1]]
                start = 0
                yield await self._event(event[: end[0]]) + event[end[0] :]
        if buffer:
            yield bytes(buffer)

    async def _event(self, event: bytes) -> bytes:
        lines = event.splitlines()
        data = [line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:")]
        if not data or sum(map(len, data)) <= LISTING_LINE_BYTES or not self.pending:
            return event
        answer = await self.answer(b"\n".join(data))
        kept = [line for line in lines if not line.startswith(b"data:")]
        return b"\n".join([*kept, b"data: " + answer])


def _boundary(buffer: bytearray, start: int) -> tuple[int, int] | None:
    """Where the first complete event in `buffer` ends, and where the blank line after it ends."""
    found = [(index, index + len(mark)) for mark in (b"\r\n\r\n", b"\n\n") if (index := buffer.find(mark, start)) >= 0]
    return min(found) if found else None
