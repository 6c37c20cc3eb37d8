"""OpenAI and every OpenAI-compatible upstream (OpenRouter, Ollama, vLLM, LM Studio, llama.cpp)."""

from __future__ import annotations

import json
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
        if self._missing_key is not None:
            raise GatewayError(
                503,
                f"Provider '{self.name}' has no API key: set {self._missing_key} in the gateway's environment "
                "and restart it.",
                type="server_error",
                code="provider_not_configured",
            )
        url = f"{self.base_url}/chat/completions"
        try:
            response = await self._client.post(url, json=body)
        except httpx.TimeoutException:
            raise GatewayError(
                504, f"Upstream provider '{self.name}' timed out.", "upstream_error", code="upstream_timeout"
            ) from None
        except httpx.HTTPError as exc:
            raise GatewayError(
                502,
                f"Upstream provider '{self.name}' is unreachable at {self.base_url}: {type(exc).__name__}.",
                "upstream_error",
                code="upstream_unreachable",
            ) from None
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
