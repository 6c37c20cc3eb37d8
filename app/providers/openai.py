"""OpenAI and every OpenAI-compatible upstream (OpenRouter, Ollama, vLLM, LM Studio, llama.cpp)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx

from app.config import ProviderConfig
from app.protocol import GatewayError


class OpenAIProvider:
    def __init__(self, name: str, config: ProviderConfig, unset_key_variable: str | None = None) -> None:
        self.name = name
        self.base_url = config.base_url.rstrip("/")
        headers = dict(config.extra_headers)
        self._missing_key = unset_key_variable if config.api_key == "" else None
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        timeout = httpx.Timeout(config.read_timeout, connect=config.connect_timeout)
        self._client = httpx.AsyncClient(
            headers=headers, timeout=timeout, limits=httpx.Limits(max_connections=200, max_keepalive_connections=50)
        )

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_key()
        try:
            response = await self._client.post(f"{self.base_url}/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            raise upstream_error(self.name, response.status_code, response.content)
        try:
            payload = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) or not payload["choices"]:
            raise GatewayError(
                502,
                f"Upstream provider '{self.name}' sent a response that is not a chat completion.",
                "upstream_error",
                code="upstream_invalid_response",
            )
        return payload

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """Yield the upstream's chat-completion chunks as they arrive; the HTTP stream closes with the generator."""
        self._check_key()
        try:
            async with self._client.stream("POST", f"{self.base_url}/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    raise upstream_error(self.name, response.status_code, await response.aread())
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # SSE comments, event names, blank separators
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    yield self._parse_chunk(data)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None

    def _parse_chunk(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            chunk = None
        if not isinstance(chunk, dict):
            raise GatewayError(
                502,
                f"Upstream provider '{self.name}' sent a malformed stream chunk.",
                "upstream_error",
                code="upstream_invalid_response",
            )
        if "error" in chunk:
            raise upstream_error(self.name, 502, json.dumps(chunk).encode())
        return chunk

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

    async def aclose(self) -> None:
        await self._client.aclose()


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
