"""Anthropic's Messages API as an upstream: the round written straight from the engine's model by the Anthropic
codec, and each answer (or stream event) checked once and read once by it."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from app.codecs.anthropic.answers import StreamDecoder, delta_from_message
from app.codecs.anthropic.protocol import AnthropicEvent, AnthropicMessage
from app.codecs.anthropic.requests import request_body
from app.config import ProviderConfig
from app.core.model import Delta, UpstreamRequest
from app.errors import GatewayError
from app.providers.base import HttpProvider, upstream_error

OVERLOADED = 529  # Anthropic's own status; clients know 503 as "try again later"


class AnthropicProvider(HttpProvider):
    def __init__(self, name: str, config: ProviderConfig, unset_key_variable: str | None = None) -> None:
        auth = {"anthropic-version": config.anthropic_version}
        if config.api_key:
            auth["x-api-key"] = config.api_key
        super().__init__(name, config, auth, unset_key_variable)
        self.max_tokens = config.max_tokens

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key}

    def error_from(self, status: int, content: bytes) -> GatewayError:
        error = upstream_error(self.name, status, content)
        if status == OVERLOADED or error.type == "overloaded_error":
            error.status, error.code = 503, error.code or "overloaded_error"
        return error

    async def complete(self, request: UpstreamRequest) -> Delta:
        message = await self.post_json("/messages", self._body(request))
        if message.get("type") != "message":
            raise self.invalid_response("a response that is not a message")
        return delta_from_message(self.checked(AnthropicMessage, message, "message"))

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        decoder = StreamDecoder()
        body = {**self._body(request), "stream": True}
        async for event in self.stream_events("/messages", body):
            if event.get("type") == "error":
                raise self.error_from(502, json.dumps(event).encode())
            for delta in decoder.deltas(self.checked(AnthropicEvent, event, "stream event")):
                yield delta

    def _body(self, request: UpstreamRequest) -> dict[str, object]:
        return request_body(request, self.max_tokens)
