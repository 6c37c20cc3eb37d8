"""The upstream HTTP client: httpx as the API, aiohttp's pool and C parser underneath (httpx-aiohttp).

httpcore's pool cost about 1 ms of CPU per upstream call, more than everything else the gateway does; aiohttp's
client is a fraction of that and mature (pooling, happy eyeballs, proxies, TLS, keep-alive edge cases). httpx
stays the client API (headers, timeouts, content decoding, proxies from the environment, respx in tests).

What this module adds to httpx-aiohttp's transport, each a promise the providers rely on:
- httpx's pool limits hold: `max_connections` in flight, at most `max_keepalive_connections` kept idle;
- a pooled connection that received bytes while idle (a 408, say) is closed, not reused: the next answer read
  on it would be those bytes;
- a POST is never re-sent here: aiohttp retries only idempotent methods, so whether a call is repeated is the
  provider's retry policy alone (a POST that was written may have been billed);
- the response head must arrive within the read timeout of the request going out, however slowly it drips;
- aiohttp's errors become the httpx errors that say what happened (httpx-aiohttp's own mapping calls a dropped
  connection a timeout);
- the request goes to aiohttp in one step: httpx's headers as plain pairs (httpx-aiohttp hands over httpx's
  Headers, which aiohttp then reads item by item, which showed in profiles), URL and timeouts parsed once.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
import yarl
from httpx_aiohttp import AiohttpTransport

LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=4.0)
# keep-alive expiry below the 5 s of common servers, so that a reused connection is still open at the other end

_head_deadline: contextvars.ContextVar[tuple[asyncio.Timeout, float] | None] = contextvars.ContextVar(
    "upstream_head_deadline", default=None
)


class _Connector(aiohttp.TCPConnector):
    """aiohttp's pool with httpx's cap on idle connections, and no reuse of one that spoke while idle."""

    def __init__(self, max_keepalive: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_keepalive = max_keepalive

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        """A connection, new or pooled, for a request about to be written: from now on the answer's head has the
        read timeout to arrive (aiohttp's own read timeout restarts with every byte, so a dripping head never
        ends)."""
        connection = await super().connect(req, traces, timeout)
        head = _head_deadline.get()
        if head is not None:
            deadline, read_timeout = head
            deadline.reschedule(asyncio.get_running_loop().time() + read_timeout)
        return connection

    async def _get(self, key: Any, traces: list[Any]) -> Any:
        while True:
            connection = await super()._get(key, traces)
            if connection is None or connection.protocol is None or not connection.protocol.should_close:
                return connection
            connection.close()  # bytes arrived while idle: they would be read as the next request's answer

    def _release(self, key: Any, protocol: Any, *, should_close: bool = False) -> None:
        super()._release(key, protocol, should_close=should_close)
        if self._max_keepalive is None:
            return
        idle = self._conns.get(key)
        excess = sum(len(conns) for conns in self._conns.values()) - self._max_keepalive
        while idle and excess > 0:
            oldest, _ = idle.popleft()
            oldest.close()
            excess -= 1


class UpstreamTransport(AiohttpTransport):
    """AiohttpTransport (its TLS context, limits and proxy from httpx's options) on `_Connector`, with its own
    request path: a response-head timeout and errors that name what happened."""

    def get_client(self) -> aiohttp.ClientSession:
        connector = _Connector(
            self.limits.max_keepalive_connections,
            limit=self.limits.max_connections or 0,  # aiohttp's 0 is "no limit", httpx's None
            keepalive_timeout=self.limits.keepalive_expiry,
            ssl=self.ssl_context,
        )
        # Cookies are httpx's business (it keeps its own jar); aiohttp's would only cost time on every response.
        return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not isinstance(self.client, aiohttp.ClientSession):
            self.client = self.get_client()
        timeouts = request.extensions.get("timeout", {})
        read_timeout = timeouts.get("read")
        try:
            async with asyncio.timeout(None) as deadline:
                token = _head_deadline.set((deadline, read_timeout) if read_timeout is not None else None)
                try:
                    response = await self.client.request(
                        request.method,
                        _url(str(request.url)),
                        headers=request.headers.multi_items(),
                        data=await request.aread() or None,
                        allow_redirects=False,
                        auto_decompress=False,  # httpx decodes
                        timeout=_timeout(timeouts.get("connect"), read_timeout, timeouts.get("pool")),
                        **self._proxy_options(),
                    )
                finally:
                    _head_deadline.reset(token)
        except TimeoutError as exc:
            if not deadline.expired():
                raise _httpx_error(exc) from exc
            raise httpx.ReadTimeout("Timed out waiting for the upstream's response.") from None
        except aiohttp.ClientError as exc:
            raise _httpx_error(exc) from exc
        return httpx.Response(
            response.status,
            headers=response.raw_headers,
            stream=_Body(response),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    def _proxy_options(self) -> dict[str, Any]:
        if self.proxy is None:
            return {}
        auth = aiohttp.BasicAuth(*self.proxy.auth) if self.proxy.auth else None
        return {"proxy": str(self.proxy.url), "proxy_auth": auth, "proxy_headers": self.proxy.headers}


@functools.lru_cache(maxsize=64)
def _url(url: str) -> yarl.URL:
    """httpx's URL is already encoded; parsed once per URL (a provider calls a couple). Credentials in the URL
    are left out: httpx has already made them the Authorization header (or the provider set its own), and
    aiohttp refuses a request that carries both."""
    parsed = yarl.URL(url, encoded=True)
    return parsed.with_user(None) if parsed.user is not None or parsed.password is not None else parsed


@functools.lru_cache(maxsize=64)
def _timeout(connect: float | None, read: float | None, pool: float | None) -> aiohttp.ClientTimeout:
    """httpx's timeouts as aiohttp's: `connect` there is the wait for a pooled connection or a new one."""
    return aiohttp.ClientTimeout(sock_connect=connect, sock_read=read, connect=pool)


class _Body(httpx.AsyncByteStream):
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _httpx_error(exc, answering=True) from exc

    async def aclose(self) -> None:
        self._response.release()  # back to the pool when the body was read to its end, else closed


def _httpx_error(cause: BaseException, answering: bool = False) -> httpx.HTTPError:
    """The httpx error that says what an aiohttp failure was; `answering`: while the body was being read."""
    if isinstance(cause, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(f"Timed out connecting to the upstream ({cause}).")
    if isinstance(cause, TimeoutError):
        return httpx.ReadTimeout("Timed out reading the upstream's response.")
    if isinstance(cause, aiohttp.ClientConnectorError):
        return httpx.ConnectError(str(cause))
    if isinstance(cause, aiohttp.ClientHttpProxyError):
        return httpx.ProxyError(f"The proxy refused the connection ({cause.status} {cause.message}).")
    if isinstance(cause, aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(f"The upstream sent a malformed HTTP response ({cause.message}).")
    if isinstance(cause, aiohttp.ClientPayloadError) or (
        answering and isinstance(cause, aiohttp.ClientConnectionError)
    ):
        return httpx.RemoteProtocolError("The upstream closed the connection before the response ended.")
    if isinstance(cause, aiohttp.ClientConnectionError):
        return httpx.RemoteProtocolError("The upstream closed the connection without answering.")
    return httpx.TransportError(str(cause) or type(cause).__name__)


class UpstreamClient(httpx.AsyncClient):
    """httpx.AsyncClient whose transports, the direct one and one per proxy named in the environment, are
    UpstreamTransport with the client's limits (httpx builds both through these two hooks)."""

    def _init_transport(  # type: ignore[override]
        self, transport: httpx.AsyncBaseTransport | None = None, **options: Any
    ) -> httpx.AsyncBaseTransport:
        return transport or UpstreamTransport(**options)

    def _init_proxy_transport(self, proxy: httpx.Proxy, **options: Any) -> httpx.AsyncBaseTransport:  # type: ignore[override]
        return UpstreamTransport(proxy=proxy, **options)


def upstream_client(**options: Any) -> httpx.AsyncClient:
    """The client every provider uses: `LIMITS` unless given, proxies from the environment honoured."""
    return UpstreamClient(**{"limits": LIMITS, **options})
