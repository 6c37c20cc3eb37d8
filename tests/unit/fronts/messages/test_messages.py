"""The Anthropic Messages front (`POST /v1/messages`) end to end with the official `anthropic` SDK: against a
scripted OpenAI-compatible upstream and a scripted Anthropic upstream, plain and streamed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import pytest

from tests.support import FIRST_CHUNK, Upstream, completion, make_config
from tests.support.anthropic import sdk
from tests.support.scripted import _as_stream

CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}
WEATHER_LOADED = ["weather__get_current_weather", "weather__get_forecast", "weather__get_alerts"]


class _AnyText:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)


ANY_TEXT = _AnyText()


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


def streamed(reply: dict[str, Any]) -> httpx.Response:
    """A scripted completion as an OpenAI-compatible upstream streams it (usage last)."""
    body = "".join(_as_stream(reply, include_usage=True))
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


async def test_streamed_search_then_mcp_call_then_answer(upstream: Upstream, gateway_factory: Any) -> None:
    upstream.script(
        streamed(completion(calls=[("search_tools", {"query": "convert currency"})], usage=(100, 10))),
        streamed(completion(calls=[("finance__convert_currency", CONVERT)], usage=(200, 20))),
        streamed(completion("5 USD is about 4.60 EUR.", usage=(300, 30))),
    )
    client, _ = await gateway_factory()
    kinds: list[str] = []
    async with sdk(client).messages.stream(
        model="fast", max_tokens=256, messages=[{"role": "user", "content": "5 USD in EUR?"}]
    ) as stream:
        async for item in stream:
            kinds.append(item.type)
        text = await stream.get_final_text()
        final = await stream.get_final_message()
    assert text == "5 USD is about 4.60 EUR."
    assert final.stop_reason == "end_turn" and final.usage.input_tokens == 600 and final.usage.output_tokens == 60
    raw = [kind for kind in kinds if kind not in ("text",)]  # the SDK adds `text` events of its own
    assert raw[0] == "message_start" and raw[-2:] == ["message_delta", "message_stop"]
    assert raw[1:4] == ["content_block_start", "content_block_delta", "content_block_delta"]
    assert raw.count("content_block_start") == raw.count("content_block_stop") == 1
    assert upstream.requests[0]["stream"] is True and upstream.requests[0]["stream_options"] == {"include_usage": True}


WEATHER_TOOL: Any = {
    "name": "get_local_time",
    "description": "The time on the user's own machine",
    "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}}},
}


@pytest.mark.parametrize("stream", [False, True])
async def test_client_tool_comes_back_as_tool_use_and_continues_with_tool_result(
    upstream: Upstream, gateway_factory: Any, stream: bool
) -> None:
    first = completion(calls=[("get_local_time", {"zone": "UTC"})], usage=(50, 5))
    second = completion("It is noon.", usage=(80, 8))
    upstream.script(streamed(first) if stream else first, second)
    client, _ = await gateway_factory()
    api = sdk(client)
    asked: list[Any] = [{"role": "user", "content": "What time is it here?"}]
    reply: Any
    if stream:
        async with api.messages.stream(model="fast", max_tokens=64, messages=asked, tools=[WEATHER_TOOL]) as events:
            reply = await events.get_final_message()
    else:
        reply = await api.messages.create(model="fast", max_tokens=64, messages=asked, tools=[WEATHER_TOOL])
    assert reply.stop_reason == "tool_use"
    call = reply.content[-1]
    assert call.type == "tool_use" and call.name == "get_local_time" and call.input == {"zone": "UTC"}
    asked += [
        {"role": "assistant", "content": [block.model_dump() for block in reply.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "12:00"}]},
    ]
    done = await api.messages.create(model="fast", max_tokens=64, messages=asked, tools=[WEATHER_TOOL])
    assert done.content[0].text == "It is noon."  # type: ignore[union-attr]
    sent = upstream.requests[1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "get_local_time"
    assert sent[-1] == {"role": "tool", "content": "12:00", "tool_call_id": call.id}
    assert upstream.tool_names(1) == ["get_local_time", *WEATHER_LOADED, "weather__get_air_quality", "search_tools"]


async def test_errors_are_in_anthropics_shape(upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(auth={"api_keys": ["gw-key"]}, max_request_bytes=4096)
    client, _ = await gateway_factory(config)
    asked: list[Any] = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.AuthenticationError) as refused:
        await sdk(client, "wrong").messages.create(model="fast", max_tokens=8, messages=asked)
    assert refused.value.body == {"type": "error", "error": {"type": "authentication_error", "message": ANY_TEXT}}
    with pytest.raises(anthropic.BadRequestError) as invalid:
        await sdk(client, "gw-key").messages.create(model="fast", max_tokens=0, messages=asked)
    assert invalid.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "max_tokens" in invalid.value.body["error"]["message"]  # type: ignore[index]
    with pytest.raises(anthropic.APIStatusError) as large:
        await sdk(client, "gw-key").messages.create(
            model="fast", max_tokens=8, messages=[{"role": "user", "content": "x" * 5000}]
        )
    assert large.value.status_code == 413 and large.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    bearer = await client.post("/v1/messages", json={"model": "fast"}, headers={"authorization": "Bearer gw-key"})
    assert bearer.status_code == 400 and bearer.json()["type"] == "error"
    form = await client.post(
        "/v1/messages", content=b"x", headers={"x-api-key": "gw-key", "content-type": "text/plain"}
    )
    assert form.status_code == 415 and form.json()["error"]["type"] == "invalid_request_error"
    assert upstream.requests == []
    upstream.script(httpx.Response(429, json={"error": {"message": "slow down", "type": "rate_limit"}}))
    with pytest.raises(anthropic.RateLimitError) as limited:
        await sdk(client, "gw-key").messages.create(model="fast", max_tokens=8, messages=asked)
    assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]


async def test_count_tokens_is_an_estimate_of_what_was_sent(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    api = sdk(client)
    short = await api.messages.count_tokens(model="fast", messages=[{"role": "user", "content": "hi"}])
    longer = await api.messages.count_tokens(
        model="fast", messages=[{"role": "user", "content": "hi " * 500}], tools=[WEATHER_TOOL]
    )
    assert 0 < short.input_tokens < 50 and longer.input_tokens > short.input_tokens + 400
    bad = await client.post("/v1/messages/count_tokens", json={"model": "fast", "messages": []})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert upstream.requests == []


async def test_stream_failures_are_anthropic_error_events(upstream: Upstream, gateway_factory: Any) -> None:
    class Endless(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            while True:
                yield FIRST_CHUNK
                await asyncio.sleep(0.01)

    client, _ = await gateway_factory(make_config(request_deadline=0.5))
    api = sdk(client)
    asked: Any = [{"role": "user", "content": "x"}]
    upstream.script(
        streamed(completion(calls=[("search_tools", {"query": "notes"})])),
        httpx.Response(503, json={"error": {"message": "overloaded"}}),
    )
    with pytest.raises(anthropic.APIStatusError) as failed:  # the SDK raises on Anthropic's `error` event
        async with api.messages.stream(model="fast", max_tokens=8, messages=asked) as stream:
            await stream.get_final_message()
    assert failed.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    assert "overloaded" in failed.value.body["error"]["message"]  # type: ignore[index]

    upstream.script(httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Endless()))
    with pytest.raises(anthropic.APIStatusError) as late:
        async with api.messages.stream(model="fast", max_tokens=8, messages=asked) as stream:
            await stream.get_final_message()
    assert late.value.body["error"]["type"] == "timeout_error"  # type: ignore[index]
    assert "deadline" in late.value.body["error"]["message"]  # type: ignore[index]
