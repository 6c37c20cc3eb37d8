"""Anthropic's Messages API as an upstream: the round written straight from the engine's model by the Anthropic
codec, and each answer (or stream event) checked once and read once by it. The beta features a Messages client
asked for (`anthropic-beta`) go with the call, beside those the provider's `extra_headers` name."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from app.codecs.anthropic.answers import StreamDecoder, delta_from_message
from app.codecs.anthropic.breakpoints import with_breakpoints
from app.codecs.anthropic.protocol import BETA_HEADER, AnthropicEvent, AnthropicMessage
from app.codecs.anthropic.requests import request_body
from app.common.errors import GatewayError
from app.config import ProviderConfig
from app.core.model import Delta, JsonObject, UpstreamRequest
from app.providers.base import HttpProvider, log_foreign_options, upstream_error

OVERLOADED = 529  # Anthropic's own status; clients know 503 as "try again later"


class AnthropicProvider(HttpProvider):
    def __init__(self, name: str, config: ProviderConfig, unset_key_variable: str | None = None) -> None:
        auth = {"anthropic-version": config.anthropic_version}
        if config.api_key:
            auth["x-api-key"] = config.api_key
        super().__init__(name, config, auth, unset_key_variable)
        self.max_tokens = config.max_tokens
        self.prompt_cache = config.prompt_cache
        configured = next((v for k, v in config.extra_headers.items() if k.lower() == BETA_HEADER), "")
        self.betas = _betas(configured)

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key}

    def error_from(self, status: int, content: bytes) -> GatewayError:
        error = upstream_error(self.name, status, content)
        if status == OVERLOADED or error.type == "overloaded_error":
            error.status, error.code = 503, error.code or "overloaded_error"
        return error

    async def complete(self, request: UpstreamRequest) -> Delta:
        log_foreign_options(self.name, request, "anthropic")
        message = await self.post_json("/messages", self._body(request), self._headers(request), check=self._message)
        return delta_from_message(message)

    def _message(self, message: JsonObject) -> JsonObject:
        if message.get("type") != "message":
            raise self.invalid_response("a response that is not a message")
        return self.checked(AnthropicMessage, message, "message")

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        log_foreign_options(self.name, request, "anthropic")
        decoder = StreamDecoder()
        body = {**self._body(request), "stream": True}
        async for event in self.stream_events("/messages", body, self._headers(request)):
            if event.get("type") == "error":
                raise self.error_from(502, json.dumps(event).encode())
            for delta in decoder.deltas(self.checked(AnthropicEvent, event, "stream event")):
                yield delta

    def _body(self, request: UpstreamRequest) -> dict[str, object]:
        body = request_body(request, self.max_tokens)
        return with_breakpoints(body) if self.prompt_cache == "auto" else body

    def _headers(self, request: UpstreamRequest) -> dict[str, str] | None:
        """The client's betas after the configured ones, each once."""
        asked = _betas(request.options.headers.get("anthropic", {}).get(BETA_HEADER, ""))
        if not asked:
            return None
        return {BETA_HEADER: ",".join(dict.fromkeys([*self.betas, *asked]))}


def _betas(header: str) -> list[str]:
    return [name.strip() for name in header.split(",") if name.strip()]
