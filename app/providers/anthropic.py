"""Anthropic's Messages API as an upstream.

The round is written as an OpenAI body first and translated by `anthropic_format` (one tested translation,
golden files); answers come back the same way. What arrived in Anthropic's own format (the Messages front's
messages, earlier answers' blocks) skips that detour (`anthropic_native`): thinking signatures, `cache_control` and
`tool_reference` blocks reach the upstream unchanged."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from app.config import ProviderConfig
from app.core.model import Delta, UpstreamRequest
from app.errors import GatewayError
from app.providers.answers import AnthropicEvent, AnthropicMessage
from app.providers.anthropic_format import StreamTranslator, from_anthropic, to_anthropic
from app.providers.anthropic_native import BlockCollector, with_native, with_thinking
from app.providers.base import HttpProvider, upstream_error
from app.providers.openai_format import delta_from_chunk, delta_from_completion, to_openai

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
        checked = self.checked(AnthropicMessage, message, "message")
        return with_thinking(delta_from_completion(from_anthropic(checked)), checked)

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        translator, blocks = StreamTranslator(), BlockCollector()
        body = {**self._body(request), "stream": True}
        async for event in self.stream_events("/messages", body):
            if event.get("type") == "error":
                raise self.error_from(502, json.dumps(event).encode())
            for chunk in translator.chunks(self.checked(AnthropicEvent, event, "stream event")):
                yield delta_from_chunk(chunk)
            more = blocks.delta(event)
            if more is not None:
                yield more

    def _body(self, request: UpstreamRequest) -> dict[str, object]:
        return with_native(to_anthropic(to_openai(request), self.max_tokens), request)
