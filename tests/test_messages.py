"""The Anthropic Messages front (`POST /v1/messages`) end to end with the official `anthropic` SDK: against a
scripted OpenAI-compatible upstream and a scripted Anthropic upstream, plain and streamed."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest

from tests.conftest import Upstream, completion

CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}
WEATHER_LOADED = ["weather__get_current_weather", "weather__get_forecast", "weather__get_alerts"]


def sdk(client: httpx.AsyncClient, key: str = "unused") -> anthropic.AsyncAnthropic:
    """The official SDK reaching the gateway in memory, through the test client's ASGI transport."""
    return anthropic.AsyncAnthropic(base_url="http://gw", api_key=key, http_client=client, max_retries=0)


async def test_search_then_mcp_call_then_answer(upstream: Upstream, gateway_factory: Any) -> None:
    upstream.script(
        completion(calls=[("search_tools", {"query": "convert currency"})], usage=(100, 10)),
        completion(calls=[("finance__convert_currency", CONVERT)], usage=(200, 20)),
        completion("5 USD is about 4.60 EUR.", usage=(300, 30)),
    )
    client, _ = await gateway_factory()
    reply = await sdk(client).messages.create(
        model="fast",
        max_tokens=512,
        system=[{"type": "text", "text": "Be exact.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "How much is 5 USD in EUR?"}],
    )
    assert reply.type == "message" and reply.role == "assistant" and reply.stop_reason == "end_turn"
    assert [block.type for block in reply.content] == ["text"]
    assert reply.content[0].text == "5 USD is about 4.60 EUR."  # type: ignore[union-attr]
    assert reply.usage.input_tokens == 600 and reply.usage.output_tokens == 60
    first = upstream.requests[0]
    assert first["messages"][0] == {"role": "system", "content": [{"type": "text", "text": "Be exact."}]}
    assert first["max_tokens"] == 512 and upstream.tool_names(0)[-1] == "search_tools"
    assert "finance__convert_currency" in upstream.tool_names(1)
    result = upstream.requests[2]["messages"][-1]
    assert result["role"] == "tool" and "EUR" in result["content"]
