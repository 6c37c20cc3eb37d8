"""A lean HTTP/1.1 transport for httpx: asyncio connections, responses parsed by httptools, pooled per origin.

Profiles of a pass-through request put about two thirds of the gateway's CPU in httpcore's connection pool and
its anyio streams: about 1 ms per upstream call on a small machine, more than everything else the gateway does.
A provider sends one kind of traffic (a POST with a JSON body; a JSON or SSE answer), and this transport does
that at about a quarter of the cost. httpx stays the client API (headers, timeouts, content decoding, proxies
from the environment, respx in tests); only the wire work moves here. Parsing is httptools (llhttp, the parser
uvicorn uses), so HTTP framing is not hand-written.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import socket
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator
from typing import Any, cast

import httptools
import httpx

_MAX_BUFFERED = 1 << 20  # stop reading from the socket while this much of a body waits for its reader


class _Connection(asyncio.Protocol):
    """One keep-alive connection; it carries one response at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._writable: asyncio.Future[None] | None = None
        self._read_timer: asyncio.TimerHandle | None = None
        self.begin()

    def begin(self) -> None:
        """Reset per-response state before a request is written."""
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.received_any = False
        self.complete = False
        self._keep_alive = False
        self._framed = False  # the body's end is known (length or chunks), so a close before it is an error
        self._error: Exception | None = None
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._waiting_since = 0.0
        self._stop_read_timer()
        self._head: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def reusable(self) -> bool:
        return self.complete and self._keep_alive and not self.closed and self._error is None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio subclasses

    def data_received(self, data: bytes) -> None:
        self.received_any = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx.RemoteProtocolError("The upstream switched protocols, which this client does not do."))
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"The upstream sent a malformed HTTP response ({exc})."))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self._head.done():
            self._fail(httpx.RemoteProtocolError("The upstream closed the connection without answering."))
        elif not self.complete:
            if self._framed:
                self._fail(httpx.RemoteProtocolError("The upstream closed the connection before the response ended."))
            else:
                self.complete = True  # a body that runs until the connection closes
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length" or (lower == b"transfer-encoding" and b"chunked" in value.lower()):
            self._framed = True

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        if not self._head.done():
            self._head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > _MAX_BUFFERED and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self._keep_alive = self._parser.should_keep_alive()  # only meaningful inside this callback
        self.complete = True
        self._stop_read_timer()
        self._wake()

    # used by the transport

    def _fail(self, error: Exception) -> None:
        self._error = error
        if not self._head.done():
            self._head.set_exception(error)
        self._wake()
        if self.transport is not None:
            self.transport.close()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def send(self, data: bytes, timeout: float | None) -> None:
        """Write; wait (within `timeout`) only if the socket's buffer is full, which small requests never meet."""
        assert self.transport is not None
        self.transport.write(data)
        if self._writable is not None:
            try:
                async with asyncio.timeout(timeout):
                    await self._writable
            except TimeoutError:
                raise httpx.WriteTimeout("Timed out sending the request.") from None
            self._writable = None

    async def response_head(self) -> None:
        await self._head

    async def body(self, timeout: float | None) -> AsyncIterator[bytes]:
        while True:
            while self._chunks:
                chunk = self._chunks.popleft()
                self._buffered -= len(chunk)
                if self._paused and self._buffered < _MAX_BUFFERED // 2 and self.transport is not None:
                    self._paused = False
                    self.transport.resume_reading()
                yield chunk
            if self._error is not None:
                raise self._error
            if self.complete:
                return
            loop = asyncio.get_running_loop()
            self._waiter = loop.create_future()
            self._waiting_since = loop.time()
            if timeout is not None and self._read_timer is None:
                self._read_timer = loop.call_at(self._waiting_since + timeout, self._check_read, timeout)
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _check_read(self, timeout: float) -> None:
        """One lazily re-armed timer per response instead of a timeout per awaited chunk (a stream's chunks
        arrive one by one, and per-chunk timers showed in profiles): fail the reader only when it has really
        waited `timeout` seconds."""
        self._read_timer = None
        if self.complete or self._error is not None:
            return
        if self._waiter is None or self._waiter.done():  # data came, or the reader is busy: a full period more
            when = asyncio.get_running_loop().time() + timeout
        else:
            when = self._waiting_since + timeout
            if asyncio.get_running_loop().time() >= when:
                self._waiter.set_exception(httpx.ReadTimeout("Timed out reading the response body."))
                return
        self._read_timer = asyncio.get_running_loop().call_at(when, self._check_read, timeout)

    def _stop_read_timer(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def close(self) -> None:
        self.closed = True
        self._stop_read_timer()
        if self.transport is not None:
            self.transport.close()


class _ResponseBody(httpx.AsyncByteStream):
    def __init__(self, connection: _Connection, release: Any, read_timeout: float | None) -> None:
        self._connection = connection
        self._release = release
        self._read_timeout = read_timeout
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._connection.body(self._read_timeout):
            yield chunk

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            self._release(self._connection)


class LeanTransport(httpx.AsyncBaseTransport):
    """http and https to a few origins with keep-alive; idle connections are reused newest first. At most
    `max_connections` requests are in flight; more wait for a slot up to httpx's pool timeout."""

    def __init__(
        self,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 200,
        max_idle_per_origin: int = 50,
        idle_expiry: float = 4.0,  # below the 5 s keep-alive of common servers, so a reused one is still open
    ) -> None:
        self._ssl_context = ssl_context
        self._slots = asyncio.Semaphore(max_connections)
        self._max_idle = max_idle_per_origin
        self._idle_expiry = idle_expiry
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        message = _serialise(request, await request.aread())
        await self._take_slot(timeouts.get("pool"))
        try:
            connection = self._reuse(origin)
            if connection is not None:
                try:
                    return await self._exchange(connection, origin, message, timeouts)
                except httpx.RemoteProtocolError:
                    if connection.received_any:
                        raise
                    # The server closed the idle connection as the request went out: nothing was processed.
            connection = await self._connect(origin, timeouts.get("connect"))
            return await self._exchange(connection, origin, message, timeouts)
        except BaseException:
            self._slots.release()
            raise

    async def _take_slot(self, timeout: float | None) -> None:
        if not self._slots.locked():
            await self._slots.acquire()  # free: returns without waiting
            return
        try:
            async with asyncio.timeout(timeout):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("Timed out waiting for a free upstream connection.") from None

    async def aclose(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()

    def _reuse(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < self._idle_expiry:
                connection.begin()
                return connection
            self._discard(connection)
        return None

    async def _connect(self, origin: tuple[str, str, int], timeout: float | None) -> _Connection:
        scheme, host, port = origin
        context = None
        if scheme == "https":
            context = self._ssl_context or _default_ssl_context()
        try:
            async with asyncio.timeout(timeout):
                _, connection = await asyncio.get_running_loop().create_connection(
                    _Connection, host, port, ssl=context, server_hostname=host if context else None
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"Timed out connecting to {host}:{port}.") from None
        except OSError as exc:
            raise httpx.ConnectError(f"Could not connect to {host}:{port}: {exc}") from exc
        sock = connection.transport.get_extra_info("socket") if connection.transport else None
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._open.add(connection)
        return connection

    async def _exchange(
        self, connection: _Connection, origin: tuple[str, str, int], message: bytes, timeouts: dict[str, Any]
    ) -> httpx.Response:
        try:
            await connection.send(message, timeouts.get("write"))
            try:
                async with asyncio.timeout(timeouts.get("read")):
                    await connection.response_head()
            except TimeoutError:
                raise httpx.ReadTimeout("Timed out waiting for the response.") from None
        except BaseException:
            self._discard(connection)
            raise

        def release(done: _Connection) -> None:
            self._slots.release()
            if done.reusable and len(self._idle.setdefault(origin, [])) < self._max_idle:
                done.idle_since = time.monotonic()
                self._idle[origin].append(done)
            else:
                self._discard(done)

        body = _ResponseBody(connection, release, timeouts.get("read"))
        return httpx.Response(
            connection.status, headers=connection.headers, stream=body, extensions={"http_version": b"HTTP/1.1"}
        )

    def _discard(self, connection: _Connection) -> None:
        connection.close()
        self._open.discard(connection)


def _serialise(request: httpx.Request, content: bytes) -> bytes:
    """The request line, headers and body; a body httpx meant to send in chunks is sent as one chunk."""
    lines = [request.method.encode(), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    chunked = False
    for name, value in request.headers.raw:
        if name.lower() == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        lines += [name, b": ", value, b"\r\n"]
    lines.append(b"\r\n")
    if chunked:
        lines += [f"{len(content):x}\r\n".encode(), content, b"\r\n0\r\n\r\n"] if content else [b"0\r\n\r\n"]
    else:
        lines.append(content)
    return b"".join(lines)


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """Certificates as httpx verifies them by default (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), made once."""
    return httpx.create_ssl_context()


def upstream_transport() -> httpx.AsyncBaseTransport | None:
    """The lean transport, or None (httpx's own, which honours them) when the environment names a proxy."""
    proxies = urllib.request.getproxies()
    return None if any(proxies.get(scheme) for scheme in ("http", "https", "all")) else LeanTransport()
