"""The one interface every upstream implements, and the HTTP plumbing they share.

Providers speak OpenAI's chat-completions format at this seam whatever their own wire format is, so the loop
never knows which upstream it talks to. `HttpProvider` owns one pooled `httpx.AsyncClient` per provider and
turns transport failures and upstream error bodies into OpenAI-shaped `GatewayError`s.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any, Protocol

import httpx

from app.config import ProviderConfig
from app.protocol import GatewayError


class Provider(Protocol):
    name: str

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send one non-streaming chat-completions request; raise GatewayError on any failure."""
        ...

    def stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """Send one streaming request; yield chat-completion chunks; raise GatewayError on any failure."""
        ...

    async def aclose(self) -> None: ...


class HttpProvider:
    def __init__(
        self, name: str, config: ProviderConfig, auth_headers: dict[str, str], unset_key_variable: str | None
    ) -> None:
        self.name = name
        self.base_url = config.base_url.rstrip("/")
        self._missing_key = unset_key_variable if config.api_key == "" else None
        timeout = httpx.Timeout(config.read_timeout, connect=config.connect_timeout)
        self._client = httpx.AsyncClient(
            headers={**config.extra_headers, **auth_headers},
            timeout=timeout,
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def error_from(self, status: int, content: bytes) -> GatewayError:
        return upstream_error(self.name, status, content)

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._check_key()
        try:
            response = await self._client.post(f"{self.base_url}{path}", json=body)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            raise self.error_from(response.status_code, response.content)
        try:
            payload = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        if not isinstance(payload, dict):
            raise self.invalid_response("a response that is not a JSON object")
        return payload

    async def stream_events(self, path: str, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """The JSON of each SSE `data:` line, until `[DONE]` or the end; the HTTP stream closes with the generator."""
        self._check_key()
        try:
            async with self._client.stream("POST", f"{self.base_url}{path}", json=body) as response:
                if response.status_code >= 400:
                    raise self.error_from(response.status_code, await response.aread())
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # SSE comments, event names, blank separators
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        event = json.loads(data)
                    except json.JSONDecodeError:
                        event = None
                    if not isinstance(event, dict):
                        raise self.invalid_response("a malformed stream chunk")
                    yield event
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None

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
        return GatewayError(
            502,
            f"Upstream provider '{self.name}' is unreachable at {self.base_url}: {type(exc).__name__}.",
            "upstream_error",
            code="upstream_unreachable",
        )


def upstream_error(provider: str, status: int, content: bytes) -> GatewayError:
    """Keep the upstream's status, message, type and code; name the provider so the source is clear."""
    message, error_type, code, param = content.decode("utf-8", "replace")[:500] or f"HTTP {status}", None, None, None
    try:
        error = json.loads(content).get("error")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        error = None
    if isinstance(error, dict):
        message = str(error.get("message") or message)
        error_type, code, param = error.get("type"), error.get("code"), error.get("param")
    elif isinstance(error, str):
        message = error
    return GatewayError(
        status,
        f"Upstream provider '{provider}' returned HTTP {status}: {message}",
        type=str(error_type or ("upstream_error" if status >= 500 else "invalid_request_error")),
        param=param if isinstance(param, str) else None,
        code=str(code) if code is not None else None,
    )
