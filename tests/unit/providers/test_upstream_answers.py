"""Malformed upstream answers (a model's output is arbitrary): a 502 `upstream_invalid_response` that names what
was wrong, plain and streamed, for OpenAI-compatible and Anthropic upstreams; never a 500."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support import FIRST_CHUNK, UPSTREAM, Upstream, chat_body, completion, events, make_config
from tests.support.anthropic import anthropic_gateway, message, streamed, tool_use


def _with_message(**fields: Any) -> dict[str, Any]:
    answer = completion("x")
    answer["choices"][0]["message"].update(fields)
    return answer


def _call(**function: Any) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": "weather__get_alerts", **function}}


PLAIN = [
    ({"choices": ["x"]}, "choices.0"),
    ({"choices": []}, "choices"),
    ({"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]}, "choices.0.message"),
    (_with_message(tool_calls="abc"), "choices.0.message.tool_calls"),
    (_with_message(tool_calls=[None]), "choices.0.message.tool_calls.0"),
    (_with_message(tool_calls=[{"id": "c", "type": "function", "function": "x"}]), "tool_calls.0.function"),
    (_with_message(tool_calls=[_call(arguments={"region": "EU"})]), "tool_calls.0.function.arguments"),
    ({**completion("x"), "usage": "lots"}, "usage"),
    ({**completion("x"), "usage": {"prompt_tokens": "10", "completion_tokens": 5}}, "usage.prompt_tokens"),
]


@pytest.mark.parametrize(("answer", "where"), PLAIN)
async def test_a_malformed_completion_is_a_502_naming_the_field(
    upstream: Upstream, gateway_factory: Any, answer: dict[str, Any], where: str
) -> None:
    client, _ = await gateway_factory()
    upstream.script(answer)
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert error["code"] == "upstream_invalid_response" and error["type"] == "upstream_error"
    assert f"{where}:" in error["message"], error["message"]
    upstream.script(completion("fine"))
    assert (await client.post("/v1/chat/completions", json=chat_body("x"))).status_code == 200


@pytest.mark.parametrize(
    "raw",
    [
        b'{"choices": [{"index": 0, "message": {"content": NaN}}]}',
        b'{"choices": [{"index": 0, "message": {"content": "x"}, "logprobs": 1e999}]}',
        b'{"choices": [{"index": 0, "message": {"content": "\\ud800"}}]}',
        b"[" * 100_000,
    ],
)
async def test_json_that_cannot_be_sent_on_is_a_502(upstream: Upstream, gateway_factory: Any, raw: bytes) -> None:
    client, _ = await gateway_factory()
    upstream.script(httpx.Response(200, content=raw, headers={"content-type": "application/json"}))
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_invalid_response"


async def test_tool_arguments_too_deep_to_parse_go_back_to_the_model(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("weather__get_alerts", "[" * 100_000)]), completion("sorry"))
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 200, response.text
    assert "are not valid JSON (too deep or too long)" in upstream.requests[1]["messages"][-1]["content"]


def _stream(*chunks: Any) -> httpx.Response:
    body = FIRST_CHUNK + b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body + b"data: [DONE]\n\n")


def _delta(**delta: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta}]}


STREAMED = [
    ({"choices": ["x"]}, "choices.0"),
    ({"choices": [{"index": None, "delta": {}}]}, "choices.0.index"),
    (_delta(tool_calls="abc"), "choices.0.delta.tool_calls"),
    (_delta(tool_calls=[None]), "choices.0.delta.tool_calls.0"),
    (_delta(tool_calls=[{"index": 0, "function": "x"}]), "tool_calls.0.function"),
    (_delta(tool_calls=[{"index": None, "function": {"name": "t"}}]), "tool_calls.0.index"),
    (_delta(tool_calls=[{"index": 0, "function": {"arguments": {"a": 1}}}]), "tool_calls.0.function.arguments"),
    (_delta(content=["not", "text"]), "choices.0.delta.content"),
    ({"choices": [], "usage": {"total_tokens": [1]}}, "usage.total_tokens"),
]


@pytest.mark.parametrize(("chunk", "where"), STREAMED)
async def test_a_malformed_chunk_ends_the_stream_with_an_error_event_naming_the_field(
    upstream: Upstream, gateway_factory: Any, chunk: dict[str, Any], where: str
) -> None:
    client, _ = await gateway_factory()
    upstream.script(_stream(chunk))
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert response.status_code == 200
    error = events(response.text)[-1]["error"]
    assert error["code"] == "upstream_invalid_response" and f"{where}:" in error["message"], error


async def test_a_malformed_first_chunk_is_a_502(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    body = b'data: {"choices": [{"delta": {"tool_calls": "abc"}}]}\n\n'
    upstream.script(httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body))
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_invalid_response"


ANTHROPIC_PLAIN = [
    (message([None], "end_turn"), "content.0"),  # type: ignore[list-item]
    (message([{"type": "text", "text": None}], "end_turn"), "content.0.text"),
    (message([tool_use("weather__get_alerts", "EU")], "tool_use"), "content.0.input"),  # type: ignore[arg-type]
    ({**message([], "end_turn"), "usage": {"input_tokens": "10"}}, "usage.input_tokens"),
]


@pytest.mark.parametrize(("answer", "where"), ANTHROPIC_PLAIN)
async def test_a_malformed_anthropic_message_is_a_502_naming_the_field(
    anthropic_upstream: Any, gateway_factory: Any, answer: dict[str, Any], where: str
) -> None:
    _, replies = anthropic_upstream
    replies.append(httpx.Response(200, json=answer))
    client = await anthropic_gateway(gateway_factory)
    response = await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "sonnet"})
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert error["code"] == "upstream_invalid_response" and f"{where}:" in error["message"], error


async def test_a_malformed_anthropic_event_ends_the_stream_with_an_error_event(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    _, replies = anthropic_upstream
    good = streamed("hello there").content.decode()
    bad = {"type": "content_block_delta", "index": 0, "delta": "x"}
    replies.append(
        httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=(good.split("event: message_delta")[0] + f"data: {json.dumps(bad)}\n\n").encode(),
        )
    )
    client = await anthropic_gateway(gateway_factory)
    response = await client.post("/v1/chat/completions", json={**chat_body("x", stream=True), "model": "sonnet"})
    items = events(response.text)
    assert "".join(i["choices"][0]["delta"].get("content") or "" for i in items[:-1] if i.get("choices")) == (
        "hello there"
    )
    assert items[-1]["error"]["code"] == "upstream_invalid_response" and "delta:" in items[-1]["error"]["message"]


async def test_an_answer_larger_than_max_response_bytes_is_a_502(upstream: Upstream, gateway_factory: Any) -> None:
    provider = {"base_url": UPSTREAM, "api_key": "sk-test-secret", "max_retries": 0, "max_response_bytes": 4 << 20}
    client, _ = await gateway_factory(make_config(providers={"up": provider}))
    upstream.script(completion("x" * (5 * 1024 * 1024)), completion("ok"))
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 502, response.text
    assert response.json()["error"]["code"] == "upstream_response_too_large"
    assert "max_response_bytes" in response.json()["error"]["message"]
    assert (await client.post("/v1/chat/completions", json=chat_body("x"))).json()["choices"][0]["message"] == {
        "role": "assistant",
        "content": "ok",
    }


async def test_every_tool_result_is_bounded_even_an_unknown_tools_name(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("x" * 100_000, {})]), completion("sorry"))
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 200, response.text
    result = upstream.requests[1]["messages"][-1]["content"]
    assert result.startswith("Error: Unknown tool '" + "x" * 128 + "...'")
    assert len(result) < 2_000
