"""Anthropic upstream: recorded translations both ways (an answer reads alike from either format), and the whole
discovery loop against a respx upstream."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from app.codecs.anthropic.answers import StreamDecoder, delta_from_message
from app.codecs.anthropic.requests import request_body
from app.codecs.openai_chat.answers import delta_from_chunk, delta_from_completion
from app.core.model import Delta, UpstreamRequest
from tests.support import ROOT
from tests.support.anthropic import anthropic_gateway, message, streamed, tool_use
from tests.support.gateway import engine_request

CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}
GOLDEN = ROOT / "tests" / "golden" / "anthropic"


def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text())
    return data


def upstream_request(body: dict[str, Any]) -> UpstreamRequest:
    """A chat-completions body as the round the engine would send (the chat front reads it, no tools added)."""
    request = engine_request(body)
    tools = [tool.spec for tool in request.tools]
    return UpstreamRequest(request.model, request.messages, tools, request.options, request.stream)


def typed(deltas: list[Delta]) -> dict[str, Any]:
    """What deltas say, whatever format they were read from: text, calls, finish reasons, usage."""
    return {
        "content": "".join(delta.content for delta in deltas),
        "calls": [(c.index, c.id, c.name, c.arguments) for delta in deltas for c in delta.calls if c.id or c.arguments],
        "finish": [delta.stop.kind for delta in deltas if delta.stop],
        "usage": [delta.usage for delta in deltas if delta.usage is not None],
        "meta": [(delta.meta.id, delta.meta.model) for delta in deltas[:1] if delta.meta is not None],
    }


@pytest.mark.parametrize("name", ["request_plain.json", "request_tools.json"])
def test_requests_translate_as_recorded(name: str) -> None:
    case = golden(name)
    assert request_body(upstream_request(case["openai"]), 4096) == case["anthropic"]


@pytest.mark.parametrize("name", ["response_text.json", "response_tool_calls.json"])
def test_responses_translate_as_recorded(name: str) -> None:
    case = golden(name)
    assert typed([delta_from_message(case["anthropic"])]) == typed([delta_from_completion(case["openai"])])


def test_stream_events_translate_as_recorded() -> None:
    case = golden("stream_tool_calls.json")
    decoder = StreamDecoder()
    deltas = [delta for event in case["anthropic_events"] for delta in decoder.deltas(event)]
    assert typed(deltas) == typed([delta_from_chunk(chunk) for chunk in case["openai_chunks"]])


def test_tool_choice_variants() -> None:
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    base = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}

    def to_anthropic(body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        return request_body(upstream_request(body), max_tokens)

    assert "tool_choice" not in to_anthropic(base, 10)
    assert to_anthropic({**base, "tool_choice": "none"}, 10)["tool_choice"] == {"type": "none"}
    assert to_anthropic({**base, "tool_choice": "required"}, 10)["tool_choice"] == {"type": "any"}
    assert to_anthropic({**base, "tool_choice": "auto"}, 10).get("tool_choice") is None
    assert to_anthropic({**base, "max_completion_tokens": 77}, 10)["max_tokens"] == 77


async def test_discovery_loop_against_anthropic(anthropic_upstream: Any, gateway_factory: Any) -> None:
    calls, replies = anthropic_upstream
    replies += [
        httpx.Response(
            200, json=message([tool_use("search_tools", {"query": "convert currency"})], "tool_use", (100, 10))
        ),
        httpx.Response(
            200, json=message([tool_use("finance__convert_currency", CONVERT, "toolu_2")], "tool_use", (200, 20))
        ),
        httpx.Response(200, json=message([{"type": "text", "text": "About 4.6 EUR."}], "end_turn", (300, 30))),
    ]
    client = await anthropic_gateway(gateway_factory)
    body = {
        "model": "sonnet",
        "messages": [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "5 USD in EUR?"}],
    }
    response = await client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "About 4.6 EUR."},
        "finish_reason": "stop",
    }
    assert result["usage"]["prompt_tokens"] == 600 and result["usage"]["completion_tokens"] == 60
    first = calls[0]["body"]
    assert first["model"] == "claude-sonnet-4-5" and first["max_tokens"] == 1024
    assert first["system"] == [{"type": "text", "text": "Be exact.", "cache_control": {"type": "ephemeral"}}]
    loaded = [tool["name"] for tool in first["tools"] if not tool.get("defer_loading")]
    assert loaded[-1] == "search_tools" and "finance__convert_currency" not in loaded
    assert calls[0]["headers"]["x-api-key"] == "sk-ant-test" and calls[0]["headers"]["anthropic-version"]
    third = calls[2]["body"]["messages"]
    assert [turn["role"] for turn in third] == ["user", "assistant", "user", "assistant", "user"]
    result_block = third[-1]["content"][0]
    assert result_block["type"] == "tool_result" and result_block["tool_use_id"] == "toolu_2"
    assert "EUR" in result_block["content"]


async def test_streamed_discovery_loop_against_anthropic(anthropic_upstream: Any, gateway_factory: Any) -> None:
    calls, replies = anthropic_upstream
    replies += [
        streamed(tool=("search_tools", {"query": "exchange rates"}), usage=(100, 10)),
        streamed(tool=("finance__get_exchange_rates", {"base": "USD"}), usage=(200, 20)),
        streamed(text="Rates are in.", usage=(300, 30)),
    ]
    client = await anthropic_gateway(gateway_factory)
    body = {
        "model": "sonnet",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "rates?"}],
    }
    response = await client.post("/v1/chat/completions", json=body)
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in events if c.get("choices"))
    assert text == "Rates are in."
    reasons = [
        c["choices"][0]["finish_reason"] for c in events if c.get("choices") and c["choices"][0]["finish_reason"]
    ]
    assert reasons == ["stop"]
    assert events[-1]["usage"]["prompt_tokens"] == 600 and events[-1]["usage"]["completion_tokens"] == 60
    assert calls[0]["body"]["stream"] is True
    assert calls[2]["body"]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_s"


async def test_anthropic_errors_become_openai_errors(anthropic_upstream: Any, gateway_factory: Any) -> None:
    _, replies = anthropic_upstream
    replies += [
        httpx.Response(529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        httpx.Response(
            400, json={"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too big"}}
        ),
    ]
    client = await anthropic_gateway(gateway_factory)
    body = {"model": "sonnet", "messages": [{"role": "user", "content": "x"}]}
    overloaded = await client.post("/v1/chat/completions", json=body)
    assert overloaded.status_code == 503
    assert (
        overloaded.json()["error"]["type"] == "overloaded_error"
        and "Overloaded" in overloaded.json()["error"]["message"]
    )
    invalid = await client.post("/v1/chat/completions", json=body)
    assert invalid.status_code == 400 and "max_tokens: too big" in invalid.json()["error"]["message"]
