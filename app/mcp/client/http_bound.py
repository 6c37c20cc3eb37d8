"""The HTTP client a remote MCP server is reached with: its messages read within `mcp_limits.max_message_bytes`.

The MCP SDK reads a whole answer (and, on a stream, a whole event) into memory, however large: a remote server
could grow the gateway's memory without end, as a stdio server could with a line without a newline (see
app/mcp/client/pipe.py). Here each response's bytes are counted as they arrive, since the last event boundary (a
blank line) on an event stream and from the start on a JSON answer, and reading ends with a clear error past the
limit: the server is reported down with that reason and reconnected like after any loss.

One request's answer stream (streamable HTTP answers a request with an event stream, which may carry any number
of notifications before the answer) is bounded as a whole too, in bytes (`mcp_limits.max_call_bytes`) and in time
(the request's own timeout and a grace), so a server flooding one call with events costs the gateway a bounded
amount of work. Past either bound the stream ends with an SSE error the SDK gives that one request as its answer:
the call fails with a message naming the bound, and the connection stays up for the next call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from fastmcp.client.transports import SSETransport, StreamableHttpTransport
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from app.mcp.client.large_messages import too_large
from app.mcp.client.remote_listings import RemoteListings


class MessageTooLargeError(httpx2.ReadError):
    """A remote server sent a message over the limit."""


class CallBoundError(httpx2.SSEError):
    """A remote server's answer stream for one request went past `max_call_bytes` or its time: that request
    fails with this (the SDK answers it with "SSE stream failed: ..."); the connection stays."""


class BoundedReads:
    """One remote server's read bounds, and the reason it ended a connection, when it did (the SDK reports only
    "Connection closed" for an SSE stream that failed)."""

    def __init__(
        self,
        limit: int,
        call_bytes: int | None = None,
        call_seconds: float | None = None,
        inner: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.limit = limit
        self.call_bytes = call_bytes  # one request's answer stream, in all
        self.call_seconds = call_seconds
        self.inner = inner  # what reaches the server (tests: a scripted one); HTTP itself by default
        self.closed_because: str | None = None
        self.refused: tuple[int, str, str] | None = None  # the last HTTP error answer: status, reason, URL
        self.sse = False  # the transport speaks SSE (for what a refusal likely means)
        self.listings = RemoteListings()

    def refusal(self) -> str | None:
        """What the server's last HTTP error answer means, with the likely fix: the MCP SDK reports a 401 as
        "Server returned an error response" and a 404 as "Not Found", naming neither the status nor the remedy."""
        if self.refused is None:
            return None
        status, reason, url = self.refused
        said = f"the server answered HTTP {status} {reason} at {url}"
        if status == 401:
            return f'{said}: it wants credentials; give them in this server\'s "headers", e.g. ' + (
                '{"Authorization": "Bearer ${MY_TOKEN}"}'
            )
        if status == 403:
            return f'{said}: the credentials in this server\'s "headers" are refused (check the token and its scopes)'
        if status == 404:
            where = "/sse" if self.sse else "/mcp"
            return f"{said}: check the URL's path (an MCP server usually answers at {where})"
        if status in (400, 405, 406, 415) and self.sse:
            return f'{said}: it may speak streamable HTTP, not SSE: remove "transport": "sse" from this server'
        if status in (400, 405, 406, 415):
            return f'{said}: it may speak the older SSE transport: set "transport": "sse" for this server'
        return said

    def client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
        **options: Any,
    ) -> httpx2.AsyncClient:
        """An `httpx_client_factory` for fastmcp's HTTP transports: the SDK's defaults, with bounded reads."""
        self.closed_because = self.refused = None
        timeout = timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        return httpx2.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, transport=_BoundedTransport(self), **options
        )


def bounded_remote(
    url: str,
    headers: dict[str, str],
    limit: int,
    sse: bool,
    call_bytes: int | None = None,
    call_seconds: float | None = None,
) -> Any:
    """fastmcp's streamable HTTP (or SSE) transport for `url`, its reads bounded; `.bounds` says why it ended."""
    bounds = BoundedReads(limit, call_bytes, call_seconds)
    bounds.sse = sse
    kind = SSETransport if sse else StreamableHttpTransport
    transport = kind(url, headers=headers, httpx_client_factory=bounds.client)
    setattr(transport, "bounds", bounds)  # noqa: B010 - fastmcp's class, one attribute more
    return transport


class _Bounded(httpx2.AsyncByteStream):
    def __init__(self, stream: Any, bounds: BoundedReads, request: httpx2.Request, call: bool = False) -> None:
        self._stream, self._bounds, self._request = stream, bounds, request
        self._call = call  # one request's answer stream: bounded as a whole too

    async def __aiter__(self) -> AsyncIterator[bytes]:
        since = 0  # bytes since the last event boundary
        limit = self._bounds.limit
        call_bytes = self._bounds.call_bytes if self._call else None
        call_seconds = self._bounds.call_seconds if self._call else None
        deadline = time.monotonic() + call_seconds if call_seconds is not None else None
        total = 0
        async for chunk in self._stream:
            boundary = max(chunk.rfind(b"\n\n"), chunk.rfind(b"\r\n\r\n"))
            since = len(chunk) - boundary if boundary >= 0 else since + len(chunk)
            if since > limit:
                reason = too_large(limit)
                self._bounds.closed_because = reason
                raise MessageTooLargeError(reason, request=self._request)
            total += len(chunk)
            if call_bytes is not None and total > call_bytes:
                raise CallBoundError(
                    f"the server sent over {call_bytes:,} bytes for one request (mcp_limits.max_call_bytes)",
                    request=self._request,
                )
            if deadline is not None and time.monotonic() > deadline:
                raise CallBoundError(
                    f"the server's answer stream for one request outlasted {call_seconds:g}s (its timeout)",
                    request=self._request,
                )
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class _BoundedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, bounds: BoundedReads) -> None:
        self._inner = bounds.inner or httpx2.AsyncHTTPTransport()
        self._bounds = bounds

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        listings = self._bounds.listings
        if request.method == "POST":
            with contextlib.suppress(httpx2.RequestNotRead):  # a streamed body is no listing request
                listings.sent(request.content)
        response = await self._inner.handle_async_request(request)
        if response.status_code >= 400:
            self._bounds.refused = (response.status_code, response.reason_phrase, _shown(request.url))
        kind = response.headers.get("content-type", "")
        call = request.method == "POST" and "text/event-stream" in kind
        bounded = _Bounded(response.stream, self._bounds, request, call)
        if "text/event-stream" in kind:
            response.stream = _Passed(listings.events(bounded.__aiter__()), bounded)
        elif "json" in kind and listings.pending:
            response.stream = _Passed(listings.json_body(bounded.__aiter__()), bounded)
        else:
            response.stream = bounded
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Passed(httpx2.AsyncByteStream):
    """A response's bytes as `chunks` gives them; closing closes the stream they come from."""

    def __init__(self, chunks: AsyncIterator[bytes], source: httpx2.AsyncByteStream) -> None:
        self._chunks, self._source = chunks, source

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        await self._source.aclose()


def _shown(url: httpx2.URL) -> str:
    """A server's URL as an error names it: scheme, host, port and path, never its credentials or query."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}{f':{url.port}' if url.port else ''}{url.path}"
