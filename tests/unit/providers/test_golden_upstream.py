"""The bodies each provider sends upstream, for every front, recorded as golden files.

Each front (chat completions, Responses, Messages) sends one varied request to each upstream kind (an
OpenAI-compatible one, Anthropic's, a Responses one), plain and streamed. The upstream answers with a
`search_tools` call, then a call to the deferred MCP tool it found, then text, so every round's body is recorded:
the client's turns, tools and parameters, then the gateway's own turns and tools added. Each upstream kind is
recorded with the `tools` deferral and with its other ones (`native`; `call_tool` on a chat upstream), which keep
one tools array for every round. `TOOLSIFT_UPDATE_GOLDEN=1` rewrites the files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.config import parse_config
from tests.support.anthropic import ANTHROPIC_UPSTREAM, CLAUDE_PROVIDER, message, streamed_message, tool_use
from tests.support.gateway import ROOT, UPSTREAM, example_targets
from tests.support.responses_upstream import (
    RESPONSES_PROVIDER,
    RESPONSES_UPSTREAM,
    function_call,
    reasoning,
    response,
    sse,
    stream_events,
)
from tests.support.responses_upstream import message as output_message
from tests.support.upstream import mock_upstreams

GOLDEN = ROOT / "tests" / "golden" / "upstream"
UPDATE = os.environ.get("TOOLSIFT_UPDATE_GOLDEN") == "1"
CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}
IMAGE = "data:image/png;base64,iVBORw0KGgo="
ORDER_SCHEMA = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}
JSON_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

CHAT = {
    "model": "MODEL",
    "messages": [
        {"role": "system", "content": "Be exact."},
        {"role": "developer", "content": [{"type": "text", "text": "Answer in JSON."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": IMAGE, "detail": "low"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "The user wants an order looked up.",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order":"7"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "Order 7: 5 USD."},
        {"role": "user", "content": "Convert it to EUR.", "name": "ann"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "lookup_order", "description": "Find an order.", "parameters": ORDER_SCHEMA},
        },
        {
            "type": "function",
            "function": {
                "name": "refund",
                "description": "Refund an order.",
                "parameters": ORDER_SCHEMA,
                "strict": True,
            },
            "defer_loading": True,
        },
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "stop": ["END"],
    "temperature": 0.3,
    "top_p": 0.9,
    "max_tokens": 300,
    "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": JSON_SCHEMA}},
    "reasoning_effort": "low",
    "seed": 7,
    "user": "user-1",
    "x_vendor_option": {"keep": True},
}

RESPONSES = {
    "model": "MODEL",
    "instructions": "Be exact.",
    "input": [
        {"type": "message", "role": "developer", "content": "Answer in JSON."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in this picture?"},
                {"type": "input_image", "image_url": IMAGE, "detail": "low"},
            ],
        },
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look the order up."}]},
        {"type": "function_call", "call_id": "call_a", "name": "lookup_order", "arguments": '{"order":"7"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "Order 7: 5 USD."},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Order 7 is 5 USD."}]},
        {"type": "message", "role": "user", "content": "Convert it to EUR."},
    ],
    "tools": [
        {"type": "function", "name": "lookup_order", "description": "Find an order.", "parameters": ORDER_SCHEMA},
        {
            "type": "function",
            "name": "refund",
            "description": "Refund an order.",
            "parameters": ORDER_SCHEMA,
            "strict": True,
            "defer_loading": True,
        },
        {"type": "tool_search"},
    ],
    "tool_choice": {"type": "function", "name": "lookup_order"},
    "parallel_tool_calls": False,
    "temperature": 0.3,
    "top_p": 0.9,
    "max_output_tokens": 300,
    "text": {"format": {"type": "json_schema", "name": "answer", "schema": JSON_SCHEMA, "strict": True}},
    "reasoning": {"effort": "low"},
    "user": "user-1",
    "metadata": {"ticket": "42"},
    "store": False,
    "x_vendor_option": {"keep": True},
}

CACHE = {"type": "ephemeral"}
MESSAGES = {
    "model": "MODEL",
    "max_tokens": 300,
    "system": [{"type": "text", "text": "Be exact.", "cache_control": CACHE}],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look the order up.", "signature": "sig-earlier"},
                {"type": "redacted_thinking", "data": "opaque-earlier"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_a", "name": "lookup_order", "input": {"order": "7"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": [{"type": "text", "text": "5 USD."}]},
                {"type": "text", "text": "Convert it to EUR.", "cache_control": CACHE},
            ],
        },
    ],
    "tools": [
        {"name": "lookup_order", "description": "Find an order.", "input_schema": ORDER_SCHEMA, "cache_control": CACHE},
        {"name": "refund", "description": "Refund an order.", "input_schema": ORDER_SCHEMA, "defer_loading": True},
    ],
    "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
    "stop_sequences": ["END"],
    "temperature": 0.3,
    "top_p": 0.9,
    "top_k": 20,
    "thinking": {"type": "enabled", "budget_tokens": 200},
    "metadata": {"user_id": "user-1"},
    "x_vendor_option": {"keep": True},
}

FRONTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", CHAT),
    "responses": ("/v1/responses", RESPONSES),
    "messages": ("/v1/messages", MESSAGES),
}


UP = {"base_url": UPSTREAM, "api_key": "sk-test-secret", "max_retries": 0}


def config() -> Any:
    return parse_config(
        {
            "providers": {
                "up": {**UP, "deferral": "tools"},
                "claude": {**CLAUDE_PROVIDER, "deferral": "tools"},
                "resp": {**RESPONSES_PROVIDER, "deferral": "tools"},
                "up_call_tool": {**UP, "deferral": "call_tool"},
                "up_native": {**UP, "deferral": "native"},
                "claude_native": {**CLAUDE_PROVIDER, "deferral": "native"},
                "resp_native": {**RESPONSES_PROVIDER, "deferral": "native"},
            },
            "models": {
                "openai": {"provider": "up", "model": "gpt-test"},
                "anthropic": {"provider": "claude", "model": "claude-test"},
                "responses": {"provider": "resp", "model": "gpt-5-test"},
                "openai_call_tool": {"provider": "up_call_tool", "model": "gpt-test"},
                "openai_native": {"provider": "up_native", "model": "gpt-test"},
                "anthropic_native": {"provider": "claude_native", "model": "claude-test"},
                "responses_native": {"provider": "resp_native", "model": "gpt-5-test"},
            },
            "mcpServers": {"finance": {"command": "unused", "defer_loading": True}},
            "tool_discovery": {"semantic": {"enabled": False}},
        },
        environ={},
    )


def openai_replies(stream: bool, call_tool: bool = False) -> list[httpx.Response]:
    """Search, call the found tool (through `call_tool` with that deferral), answer; each turn with reasoning, the
    second with an upstream field it wants back."""
    convert = (
        _call("call_c", "call_tool", {"name": "finance__convert_currency", "arguments": CONVERT})
        if call_tool
        else _call("call_c", "finance__convert_currency", CONVERT)
    )
    turns: list[dict[str, Any]] = [
        {
            "reasoning_content": "Search first.",
            "tool_calls": [_call("call_s", "search_tools", {"query": "convert currency"})],
        },
        {
            "reasoning_content": "Convert now.",
            "reasoning_details": [{"type": "reasoning.text", "text": "Convert now."}],
            "tool_calls": [convert],
        },
        {"content": '{"answer": "4.6 EUR"}'},
    ]
    return [_openai_stream(turn) if stream else _openai_plain(turn) for turn in turns]


def _call(ident: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _openai_plain(turn: dict[str, Any]) -> httpx.Response:
    reply = {"role": "assistant", "content": None, **turn}
    finish = "tool_calls" if "tool_calls" in turn else "stop"
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-up",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-test-2025",
            "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def _openai_stream(turn: dict[str, Any]) -> httpx.Response:
    base = {"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-test-2025"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if "reasoning_content" in turn:
        deltas.append({"reasoning_content": turn["reasoning_content"]})
    for index, detail in enumerate(turn.get("reasoning_details") or ()):  # streamed in two pieces, as OpenRouter does
        half = len(detail["text"]) // 2
        deltas.append({"reasoning_details": [{**detail, "text": detail["text"][:half], "index": index}]})
        deltas.append({"reasoning_details": [{"type": detail["type"], "text": detail["text"][half:], "index": index}]})
    if turn.get("content"):
        deltas.append({"content": turn["content"]})
    for index, call in enumerate(turn.get("tool_calls") or ()):
        deltas.append({"tool_calls": [{**call, "index": index}]})
    chunks = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
    finish = "tool_calls" if "tool_calls" in turn else "stop"
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


def anthropic_replies(stream: bool) -> list[httpx.Response]:
    """The same three turns as Claude answers them, each with a signed thinking block."""
    turns = [
        (
            [
                {"type": "thinking", "thinking": "Search first.", "signature": "sig-1"},
                tool_use("search_tools", {"query": "convert currency"}, "toolu_s"),
            ],
            "tool_use",
        ),
        (
            [
                {"type": "thinking", "thinking": "Convert now.", "signature": "sig-2"},
                {"type": "text", "text": "Converting."},
                tool_use("finance__convert_currency", CONVERT, "toolu_c"),
            ],
            "tool_use",
        ),
        ([{"type": "text", "text": '{"answer": "4.6 EUR"}'}], "end_turn"),
    ]
    if stream:
        return [streamed_message(content, stop) for content, stop in turns]
    return [httpx.Response(200, json=message(content, stop)) for content, stop in turns]


def responses_replies(stream: bool, native: bool = False) -> list[httpx.Response]:
    """The same three turns as a Responses upstream answers them, each reasoning first (encrypted, to go back); the
    search a client-executed `tool_search` call with the `native` deferral."""
    client_search = {"type": "tool_search_call", "execution": "client", "status": "completed"}
    search = (
        {**client_search, "id": "tsc_s", "call_id": "call_s", "arguments": {"query": "convert currency"}}
        if native
        else {**function_call("search_tools", {"query": "convert currency"}), "call_id": "call_s"}
    )
    turns = [
        response(reasoning("Search first.", encrypted="enc-1"), search),
        response(
            reasoning("Convert now.", encrypted="enc-2"),
            output_message("Converting."),
            {**function_call("finance__convert_currency", CONVERT), "call_id": "call_c"},
        ),
        response(output_message('{"answer": "4.6 EUR"}')),
    ]
    if stream:
        return [httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse(stream_events(turn)))
                for turn in turns]  # fmt: skip
    return [httpx.Response(200, json=turn) for turn in turns]


REPLIES: dict[str, Callable[[bool], list[httpx.Response]]] = {
    "openai": openai_replies,
    "anthropic": anthropic_replies,
    "responses": responses_replies,
    "openai_call_tool": lambda stream: openai_replies(stream, call_tool=True),
    "openai_native": openai_replies,
    "anthropic_native": anthropic_replies,
    "responses_native": lambda stream: responses_replies(stream, native=True),
}


async def _run(front: str, upstream: str, stream: bool, gateway_factory: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    replies = REPLIES[upstream](stream)

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return replies.pop(0)

    with mock_upstreams() as router:
        router.post(f"{UPSTREAM}/chat/completions").mock(side_effect=answer)
        router.post(f"{ANTHROPIC_UPSTREAM}/messages").mock(side_effect=answer)
        router.post(f"{RESPONSES_UPSTREAM}/responses").mock(side_effect=answer)
        client, _ = await gateway_factory(config(), targets=example_targets("finance"))
        path, body = FRONTS[front]
        body = {**body, "model": upstream, "stream": stream}
        if stream and front == "chat":
            body["stream_options"] = {"include_usage": True}
        response = await client.post(path, json=body)
        assert response.status_code == 200, response.text
        if stream:
            assert "error" not in response.text.split("\n\n")[-3], response.text
    assert not replies, "every scripted round was asked for"
    return sent


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("upstream", list(REPLIES))
@pytest.mark.parametrize("front", list(FRONTS))
async def test_upstream_bodies_as_recorded(front: str, upstream: str, stream: bool, gateway_factory: Any) -> None:
    sent = await _run(front, upstream, stream, gateway_factory)
    path = GOLDEN / f"{front}_to_{upstream}_{'stream' if stream else 'plain'}.json"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(sent, indent=2, sort_keys=True) + "\n")
    assert sent == json.loads(path.read_text())
