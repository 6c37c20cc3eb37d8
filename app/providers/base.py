"""The one interface every upstream implements, and the HTTP plumbing they share.

Providers take the engine's typed round (`UpstreamRequest`) and answer with typed deltas whatever their own wire
format is, so the loop never knows which upstream it talks to; each translates at its own edge. `HttpProvider`
owns one pooled `httpx.AsyncClient` per provider and turns transport failures and upstream error bodies into
`GatewayError`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import random
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import httpx
from pydantic import BaseModel

from app.common import strict_json
from app.common.errors import GatewayError
from app.common.offload import in_thread_if_large
from app.config import ProviderConfig
from app.core.model import Delta, UpstreamRequest, WireFormat
from app.providers.answer_checks import problem
from app.providers.transport import upstream_client

log = logging.getLogger("toolsift.upstream")


class Provider(Protocol):
    name: str

    async def complete(self, request: UpstreamRequest) -> Delta:
        """Send one non-streaming request; the whole answer as one delta; raise GatewayError on any failure."""
        ...

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        """Send one streaming request; yield its deltas; raise GatewayError on any failure."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    base_delay: float
    max_delay: float
    deadline: float

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter; the upstream's Retry-After, when given, is the floor."""
        backoff = random.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))
        return max(backoff, retry_after or 0.0)


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """`retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    if "retry-after-ms" in headers:
        with contextlib.suppress(ValueError):
            return float(headers["retry-after-ms"]) / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    with contextlib.suppress(TypeError, ValueError):
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    return None


class HttpProvider:
    def __init__(
        self, name: str, config: ProviderConfig, auth_headers: dict[str, str], unset_key_variable: str | None
    ) -> None:
        self.name = name
        self.base_url = config.base_url.rstrip("/")
        self._missing_key = unset_key_variable if config.api_key == "" else None
        self.forward_client_auth = config.forward_client_auth
        self._request_headers: dict[str, str] = {}
        self._urls: dict[str, httpx.URL] = {}  # parsed once per path: URL parsing showed in per-request profiles
        self.retry = RetryPolicy(config.max_retries, config.retry_base_delay, config.retry_max_delay, config.deadline)
        self.max_response_bytes = config.max_response_bytes
        timeout = httpx.Timeout(config.read_timeout, connect=config.connect_timeout)
        self._client = upstream_client(headers={**config.extra_headers, **auth_headers}, timeout=timeout)

    async def complete(self, request: UpstreamRequest) -> Delta:
        raise NotImplementedError

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        raise NotImplementedError

    async def aclose(self) -> None:
        await self._client.aclose()

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """The headers that carry `api_key` to this upstream."""
        return {"Authorization": f"Bearer {api_key}"}

    def with_client_key(self, api_key: str | None) -> HttpProvider:
        """This provider, sending the caller's key instead of the configured one (`forward_client_auth`)."""
        if not api_key:
            raise GatewayError(
                401,
                f"Provider '{self.name}' uses the caller's own key: send it as 'Authorization: Bearer <key>'.",
                code="missing_api_key",
            )
        view = copy.copy(self)  # shares the pooled client
        view._request_headers = self.auth_headers(api_key)
        view._missing_key = None
        return view

    def error_from(self, status: int, content: bytes) -> GatewayError:
        return upstream_error(self.name, status, content)

    async def post_json(
        self,
        path: str,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        *,
        check: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The upstream's JSON answer, through `check` (its shape, answers.py). Decoding and checking a large answer
        (hundreds of tool calls, up to `max_response_bytes`) takes tens of milliseconds or more: off the event loop."""
        response = await self._send_with_retries(path, body, False, headers)
        content = response.content
        return await in_thread_if_large(len(content), self._decoded, content, check)

    def _decoded(self, content: bytes, check: Callable[[dict[str, Any]], dict[str, Any]] | None) -> dict[str, Any]:
        payload = parse_json(content)
        if not isinstance(payload, dict):
            raise self.invalid_response("a response that is not a JSON object")
        return check(payload) if check is not None else payload

    async def stream_events(
        self, path: str, body: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The JSON of each SSE `data:` line, until `[DONE]` or the end; the HTTP stream closes with the generator."""
        response = await self._send_with_retries(path, body, True, headers)
        try:
            async for line in self._capped_lines(response):
                if not line.startswith("data:"):
                    continue  # SSE comments, event names, blank separators
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                event = parse_json(data)
                if not isinstance(event, dict):
                    raise self.invalid_response("a malformed stream chunk")
                yield event
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        finally:
            await response.aclose()

    async def _capped_lines(self, response: httpx.Response) -> AsyncGenerator[str, None]:
        """The stream's lines, every byte counted against `max_response_bytes` as it arrives (decoded, so a
        compressed bomb is capped as it expands): a longer stream, or one endless line, is a 502 ending the stream
        rather than memory the gateway holds. A line that spans blocks is joined once, so the cost stays linear."""
        total = 0
        partial: list[bytes] = []  # the current line's pieces, until its newline comes
        async for block in response.aiter_bytes():
            total += len(block)
            if total > self.max_response_bytes:
                raise self._too_large("a stream")
            *complete, rest = block.split(b"\n")
            if complete:
                complete[0] = b"".join([*partial, complete[0]])
                partial = []
                for line in complete:
                    yield line.rstrip(b"\r").decode("utf-8", "replace")
            if rest:
                partial.append(rest)
        if partial:
            yield b"".join(partial).rstrip(b"\r").decode("utf-8", "replace")

    def _too_large(self, what: str) -> GatewayError:
        return GatewayError(
            502,
            f"Upstream provider '{self.name}' sent {what} larger than {self.max_response_bytes:,} bytes "
            "(providers.NAME.max_response_bytes).",
            "upstream_error",
            code="upstream_response_too_large",
        )

    async def _send_with_retries(
        self, path: str, body: dict[str, Any], stream: bool, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """Send until a success, a final error, or the deadline. Retries happen only here, before any byte of
        the answer was read, so nothing already streamed to a client is ever repeated."""
        self._check_key()
        deadline = time.monotonic() + self.retry.deadline
        for attempt in range(self.retry.max_retries + 1):
            try:
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                    return await self._send_once(path, body, stream, headers)
            except TimeoutError:
                raise GatewayError(
                    504,
                    f"Upstream provider '{self.name}' did not answer within the {self.retry.deadline:g}s deadline.",
                    "upstream_error",
                    code="upstream_timeout",
                ) from None
            except GatewayError as exc:
                delay = self.retry.delay(attempt, exc.retry_after)
                if not exc.retryable or attempt >= self.retry.max_retries or time.monotonic() + delay >= deadline:
                    raise
                log.warning(
                    "upstream retry provider=%s status=%d attempt=%d delay_s=%.2f",
                    self.name,
                    exc.status,
                    attempt + 1,
                    delay,
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send_once(
        self, path: str, body: dict[str, Any], stream: bool, headers: Mapping[str, str] | None
    ) -> httpx.Response:
        url = self._urls.get(path) or self._urls.setdefault(path, httpx.URL(f"{self.base_url}{path}"))
        sent = {**headers, **self._request_headers} if headers else self._request_headers
        request = self._client.build_request("POST", url, json=body, headers=sent)
        try:
            response = await self._client.send(request, stream=True)
            if not stream or response.status_code >= 400:
                response = await self._read_capped(response)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            content = response.content
            error = self.error_from(response.status_code, content)
            error.retry_after = retry_after_seconds(response.headers)
            raise error
        return response

    async def _read_capped(self, response: httpx.Response) -> httpx.Response:
        """The whole answer, read up to `max_response_bytes`: a larger one is a 502 before it costs memory and
        decoding time on the event loop."""
        content = bytearray()
        try:
            async for block in response.aiter_bytes():  # decoded: a compressed bomb is capped as it expands
                content += block
                if len(content) > self.max_response_bytes:
                    raise self._too_large("an answer")
        finally:
            await response.aclose()
        headers = [(name, value) for name, value in response.headers.multi_items() if name != "content-encoding"]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=httpx.Response(response.status_code, headers=response.headers, content=bytes(content)).content
            if "content-encoding" in response.headers
            else bytes(content),
            request=response.request,
        )

    def checked(self, shape: type[BaseModel], answer: dict[str, Any], kind: str) -> dict[str, Any]:
        """`answer` itself once it has `shape` (answers.py), else the 502 that names what is wrong with it."""
        wrong = problem(shape, answer)
        if wrong is not None:
            raise self.invalid_response(f"an invalid {kind} ({wrong})")
        return answer

    def invalid_response(self, what: str) -> GatewayError:
        return GatewayError(
            502, f"Upstream provider '{self.name}' sent {what}.", "upstream_error", code="upstream_invalid_response"
        )

    def _check_key(self) -> None:
        if self._missing_key is not None:
            raise GatewayError(
                503,
                f"Provider '{self.name}' has no API key: set {self._missing_key} in the gateway's environment "
                "and restart it.",
                type="server_error",
                code="provider_not_configured",
            )

    def _transport_error(self, exc: httpx.HTTPError) -> GatewayError:
        if isinstance(exc, httpx.TimeoutException):
            return GatewayError(
                504, f"Upstream provider '{self.name}' timed out.", "upstream_error", code="upstream_timeout"
            )
        if isinstance(exc, httpx.ConnectError):
            return GatewayError(
                502,
                f"Upstream provider '{self.name}' is unreachable at {self.base_url}: {type(exc).__name__}.",
                "upstream_error",
                code="upstream_unreachable",
            )
        return GatewayError(  # the connection broke, or the bytes were not HTTP
            502,
            f"Upstream provider '{self.name}' failed mid-exchange: {exc or type(exc).__name__}",
            "upstream_error",
            code="upstream_connection_error",
        )


def log_foreign_options(provider: str, request: UpstreamRequest, own: WireFormat) -> None:
    """One debug line when a request carries parameters or headers of another wire format (Anthropic's beta fields
    and `anthropic-beta` to an OpenAI-compatible upstream, say): this upstream would not know them, so they are
    left out of its call."""
    options = request.options
    foreign = [
        *(f"{key} ({wire})" for wire, values in options.params.items() if wire != own for key in values),
        *(f"{key} header ({wire})" for wire, values in options.headers.items() if wire != own for key in values),
    ]
    if foreign and log.isEnabledFor(logging.DEBUG):
        log.debug("upstream provider=%s left out what it does not take: %s", provider, ", ".join(foreign))


def refuse_threads(request: UpstreamRequest) -> None:
    """An Anthropic message thread (`thread`: the client sends only the new turn, the rest is kept upstream) that
    an upstream of another format cannot continue: sent on, its context would be silently lost. Refused as
    Anthropic refuses a thread it does not serve, so the SDKs' tool runners go on without threads."""
    thread = request.options.params.get("anthropic", {}).get("thread")
    if thread is not None:
        raise GatewayError(
            400,
            "Message threads are not supported by this model's upstream; send the whole conversation instead.",
            param="thread",
            code="thread_unsupported_request",
            fields={"details": {"error_code": "thread_unsupported_request"}},
        )


def upstream_error(provider: str, status: int, content: bytes) -> GatewayError:
    """The upstream's error as it gave it: its status, message, type, code and param, and its other fields
    (Anthropic's `details`, which the SDKs act on); the gateway's own words, which provider said it, go in the
    source (a header), not into the message."""
    message, error_type, code, param = content.decode("utf-8", "replace")[:500] or f"HTTP {status}", None, None, None
    fields: dict[str, Any] = {}
    parsed = parse_json(content)
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or message)
        error_type, code, param = error.get("type"), error.get("code"), error.get("param")
        fields = {key: value for key, value in error.items() if key not in STANDARD_ERROR_FIELDS}
    elif isinstance(error, str):
        message = error
    return GatewayError(
        status,
        message,
        type=str(error_type or ("upstream_error" if status >= 500 else "invalid_request_error")),
        param=param if isinstance(param, str) else None,
        code=str(code) if code is not None else None,
        source=f"upstream provider '{provider}' answered HTTP {status}",
        fields=fields,
    )


STANDARD_ERROR_FIELDS = frozenset({"message", "type", "code", "param"})


def parse_json(text: str | bytes) -> Any:
    """Standard JSON that can be sent on as JSON, or None: no NaN, Infinity or 1e999, no lone surrogates, and
    nesting or integers beyond what Python parses are invalid too rather than an exception nobody expects."""
    try:
        # No cap on the number of values: a model's text may hold any number of commas and brackets.
        return strict_json.loads(text, max_values=None)
    except ValueError:  # JsonProblem, JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
