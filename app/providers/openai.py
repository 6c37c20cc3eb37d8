"""OpenAI and every OpenAI-compatible upstream (OpenRouter, Ollama, vLLM, LM Studio, llama.cpp)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from app.config import ProviderConfig
from app.providers.answers import Chunk, Completion
from app.providers.base import HttpProvider


class OpenAIProvider(HttpProvider):
    def __init__(self, name: str, config: ProviderConfig, unset_key_variable: str | None = None) -> None:
        auth = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        super().__init__(name, config, auth, unset_key_variable)

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.checked(Completion, await self.post_json("/chat/completions", body), "chat completion")

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        async for chunk in self.stream_events("/chat/completions", body):
            if "error" in chunk:
                raise self.error_from(502, json.dumps(chunk).encode())
            yield self.checked(Chunk, chunk, "stream chunk")
