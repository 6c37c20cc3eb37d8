"""A Responses upstream (`"type": "openai_responses"`) behind every front, in memory: a chat client's discovery
loop with the reasoning carried between the gateway's rounds, errors with their status, streams that fail or stop
short, and a Messages client; what the upstream is sent each round."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from app.config import parse_config
from tests.support.gateway import example_targets
from tests.support.responses_upstream import (
    RESPONSES_PROVIDER,
    failed_events,
    function_call,
    message,
    reasoning,
    response,
    scripted_responses,
    stream_events,
)
from tests.support.upstream import events, mock_upstreams

CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}


def config(**provider: Any) -> Any:
    return parse_config(
        {
            "providers": {"resp": {**RESPONSES_PROVIDER, **provider}},
            "models": {"r": {"provider": "resp", "model": "gpt-5", "params": {"reasoning_effort": "low"}}},
            "mcpServers": {"finance": {"command": "unused", "defer_loading": True}},
            "tool_discovery": {"semantic": {"enabled": False}},
        },
        environ={},
    )


@pytest.fixture
async def gateway(gateway_factory: Any) -> Any:
    """(client, bodies sent upstream, replies to give) for a gateway whose model `r` is behind the upstream."""
    with mock_upstreams() as router:
        sent, replies = scripted_responses(router)
        client, _ = await gateway_factory(config(deferral="tools"), targets=example_targets("finance"))
        yield client, sent, replies


def loop_replies() -> list[Any]:
    """Search, call the deferred tool found, answer; each round reasons first, the last sums it up."""
    return [
        response(reasoning("Search.", encrypted="enc-1"), function_call("search_tools", {"query": "convert currency"})),
        response(reasoning("Convert.", encrypted="enc-2"), function_call("finance__convert_currency", CONVERT)),
        response(reasoning("Answer.", encrypted="enc-3"), message("5 USD is about 4.6 EUR.")),
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_chat_clients_discovery_loop_runs_against_a_responses_upstream(gateway: Any, stream: bool) -> None:
    client, sent, replies = gateway
    replies += loop_replies()
    body = {"model": "r", "messages": [{"role": "user", "content": "5 USD in EUR?"}], "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    answered = await client.post("/v1/chat/completions", json=body)
    assert answered.status_code == 200, answered.text
    if stream:
        chunks = [chunk for chunk in events(answered.text) if isinstance(chunk, dict)]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        reasoning_text = "".join(
            c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks if c["choices"]
        )
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
        usage = chunks[-1]["usage"]
    else:
        choice, usage = answered.json()["choices"][0], answered.json()["usage"]
        text, reasoning_text = choice["message"]["content"], choice["message"]["reasoning_content"]
        finish = [choice["finish_reason"]]
    assert text == "5 USD is about 4.6 EUR." and finish == ["stop"]
    assert "Search." in reasoning_text and "Answer." in reasoning_text, "every round's reasoning summary is shown"
    assert usage["prompt_tokens"] == 30 and usage["completion_tokens"] == 15
    assert [(each["store"], each.get("stream", False)) for each in sent] == [(False, stream)] * 3
    first = sent[0]
    assert first["model"] == "gpt-5" and first["reasoning"] == {"effort": "low"}
    assert first["include"] == ["reasoning.encrypted_content"], "the gateway asks for reasoning it can send back"
    assert first["input"] == [{"type": "message", "role": "user", "content": "5 USD in EUR?"}]
    assert [tool["name"] for tool in first["tools"]] == ["search_tools"] and first["tools"][0]["type"] == "function"
    third = sent[2]["input"]
    assert [item["type"] for item in third] == [
        "message", "reasoning", "function_call", "function_call_output", "reasoning", "function_call",
        "function_call_output",
    ]  # fmt: skip
    summary = [{"type": "summary_text", "text": "Search."}]
    assert third[1] == {"type": "reasoning", "summary": summary, "encrypted_content": "enc-1"}, (
        "each round's reasoning goes back as it came, without its id"
    )
    assert all("id" not in item for item in third), "nothing is stored upstream: no item is named by its id"
    assert third[5]["name"] == "finance__convert_currency" and json.loads(third[5]["arguments"]) == CONVERT
    assert "EUR" in third[6]["output"] and third[6]["call_id"] == third[5]["call_id"]
    assert "finance__convert_currency" in [tool["name"] for tool in sent[2]["tools"]]


async def test_a_messages_client_is_answered_by_a_responses_upstream(gateway: Any) -> None:
    client, sent, replies = gateway
    replies.append(response(reasoning("Greet.", encrypted="enc"), message("Hello there.")))
    api = anthropic.AsyncAnthropic(base_url="http://gw", api_key="unused", http_client=client, max_retries=0)
    answer = await api.messages.create(model="r", max_tokens=100, messages=[{"role": "user", "content": "Hi"}])
    assert [block.type for block in answer.content][-1] == "text" and answer.content[-1].text == "Hello there."  # type: ignore[union-attr]
    assert answer.stop_reason == "end_turn" and sent[0]["max_output_tokens"] == 100


async def test_upstream_errors_keep_their_status_and_failed_streams_say_why(gateway: Any) -> None:
    client, sent, replies = gateway
    chat = {"model": "r", "messages": [{"role": "user", "content": "hi"}]}
    limited = {"error": {"message": "Rate limit reached.", "type": "requests", "code": "rate_limit_exceeded"}}
    replies.append((429, limited))
    refused = await client.post("/v1/chat/completions", json=chat)
    assert refused.status_code == 429 and "Rate limit reached." in refused.json()["error"]["message"]

    replies.append({**response(), "status": "failed", "error": {"code": "server_error", "message": "It broke."}})
    broken = await client.post("/v1/chat/completions", json=chat)
    assert broken.status_code == 502 and "It broke." in broken.json()["error"]["message"]

    replies.append(failed_events("rate_limit_exceeded", "Too fast mid-stream."))
    streamed = await client.post("/v1/chat/completions", json={**chat, "stream": True})
    assert streamed.status_code == 200, "the stream had begun"
    error = [chunk for chunk in events(streamed.text) if isinstance(chunk, dict) and "error" in chunk][-1]["error"]
    assert "Too fast mid-stream." in error["message"]

    replies.append(stream_events(response(message("Cut off here.")))[:-1])  # no response.completed
    short = await client.post("/v1/chat/completions", json={**chat, "stream": True})
    error = [chunk for chunk in events(short.text) if isinstance(chunk, dict) and "error" in chunk][-1]["error"]
    assert "before the response was complete" in error["message"]
    assert len(sent) == 4


async def test_a_stream_larger_than_max_response_bytes_is_a_502(gateway_factory: Any) -> None:
    with mock_upstreams() as router:
        _, replies = scripted_responses(router)
        client, _ = await gateway_factory(config(max_response_bytes=4096))
        replies.append(response(message("word " * 2000)))
        body = {"model": "r", "messages": [{"role": "user", "content": "long"}], "stream": True}
        answered = await client.post("/v1/chat/completions", json=body)
    assert answered.status_code == 502, "it arrives in one block, before the stream began"
    error = answered.json()["error"]
    assert error["code"] == "upstream_response_too_large" and "max_response_bytes" in error["message"]


@pytest.mark.parametrize(("fallback", "kept"), [("resp", True), ("chat", False)])
async def test_hosted_tools_go_to_a_fallback_chain_only_if_every_model_in_it_runs_them(
    gateway_factory: Any, fallback: str, kept: bool
) -> None:
    chat = {"base_url": "http://chat.test/v1", "api_key": "sk-chat", "max_retries": 0}
    models = {"main": {"provider": "resp", "model": "gpt-5", "fallbacks": ["other"]},
              "other": {"provider": fallback, "model": "gpt-5-mini"}}  # fmt: skip
    with mock_upstreams() as router:
        sent, replies = scripted_responses(router)
        client, _ = await gateway_factory(parse_config({"providers": {"resp": RESPONSES_PROVIDER, "chat": chat},
                                                        "models": models}, environ={}), targets={})  # fmt: skip
        replies.append(response(message("Searched.")))
        body = {"model": "main", "input": "news?", "tools": [{"type": "web_search"}]}
        answered = (await client.post("/v1/responses", json=body)).json()
    assert (sent[0].get("tools") == [{"type": "web_search"}]) is kept
    assert ("hosted_tools_dropped" in answered["tool_discovery"]) is not kept
