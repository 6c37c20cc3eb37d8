"""Anthropic's Messages API behind the OpenAI-shaped provider interface (translation in anthropic_format)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from app.config import ProviderConfig
from app.fronts.chat_completions import GatewayError
from app.providers.answers import AnthropicEvent, AnthropicMessage
from app.providers.anthropic_format import StreamTranslator, from_anthropic, to_anthropic
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

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        message = await self.post_json("/messages", to_anthropic(body, self.max_tokens))
        if message.get("type") != "message":
            raise self.invalid_response("a response that is not a message")
        return from_anthropic(self.checked(AnthropicMessage, message, "message"))

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        translator = StreamTranslator()
        async for event in self.stream_events("/messages", {**to_anthropic(body, self.max_tokens), "stream": True}):
            if event.get("type") == "error":
                raise self.error_from(502, json.dumps(event).encode())
            for chunk in translator.chunks(self.checked(AnthropicEvent, event, "stream event")):
                yield chunk
