"""OpenAI and every OpenAI-compatible upstream (OpenRouter, Ollama, vLLM, LM Studio, llama.cpp)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from app.codecs.openai_chat.answer_types import Chunk, Completion
from app.codecs.openai_chat.answers import ReasoningDetails, delta_from_chunk, delta_from_completion
from app.codecs.openai_chat.requests import to_openai
from app.config import ProviderConfig
from app.core.model import Delta, JsonObject, UpstreamRequest
from app.providers.base import HttpProvider, log_foreign_options, refuse_threads


class OpenAIProvider(HttpProvider):
    def __init__(self, name: str, config: ProviderConfig, unset_key_variable: str | None = None) -> None:
        auth = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        super().__init__(name, config, auth, unset_key_variable)
        self.stream_usage = config.stream_usage

    async def complete(self, request: UpstreamRequest) -> Delta:
        log_foreign_options(self.name, request, "openai")
        refuse_threads(request)
        answer = await self.post_json("/chat/completions", to_openai(request), check=self._completion)
        return delta_from_completion(answer)

    def _completion(self, answer: JsonObject) -> JsonObject:
        return self.checked(Completion, answer, "chat completion")

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        log_foreign_options(self.name, request, "openai")
        refuse_threads(request)
        details = ReasoningDetails()
        body = to_openai(request)
        if not self.stream_usage:  # an upstream that refuses the option: counted with our own tokenizer
            body.pop("stream_options", None)
        async for chunk in self.stream_events("/chat/completions", body):
            if "error" in chunk:
                raise self.error_from(502, json.dumps(chunk).encode())
            yield delta_from_chunk(self.checked(Chunk, chunk, "stream chunk"), details)
