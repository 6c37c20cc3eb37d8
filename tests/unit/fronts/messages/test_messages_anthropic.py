"""The Messages front against an Anthropic upstream: what Anthropic understands natively (thinking blocks and their
signatures, `cache_control`, `tool_reference`, `thinking`) passes through untouched, plain and streamed, and every
round's thinking reaches the client signed."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx

from tests.support import example_targets
from tests.support.anthropic import CLAUDE_PROVIDER, anthropic_config, message, sdk, sse, streamed_message, tool_use

THINK = {"type": "thinking", "thinking": "The user wants a conversion.", "signature": "sig-Zm9vYmFy=="}
CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}


async def _client(gateway_factory: Any) -> httpx.AsyncClient:
    """The gateway places no cache breakpoints of its own here: the tests compare what reached the upstream."""
    targets = example_targets("weather", "finance")
    providers = {"claude": {**CLAUDE_PROVIDER, "prompt_cache": "off"}}
    client, _ = await gateway_factory(anthropic_config(providers=providers), targets=targets)
    return client  # type: ignore[no-any-return]


async def test_native_blocks_reach_the_upstream_untouched(anthropic_upstream: Any, gateway_factory: Any) -> None:
    calls, replies = anthropic_upstream
    replies.append(httpx.Response(200, json=message([THINK, {"type": "text", "text": "Done."}], "end_turn", (40, 9))))
    client = await _client(gateway_factory)
    system: Any = [{"type": "text", "text": "Be exact.", "cache_control": {"type": "ephemeral"}}]
    history: Any = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Convert 5 USD", "cache_control": {"type": "ephemeral"}}],
        },
        {
            "role": "assistant",
            "content": [THINK, {"type": "text", "text": "Let me check."}, tool_use("lookup", {"q": "fx"})],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "tool_reference", "tool_name": "convert"}],
                },
                {"type": "text", "text": "go on"},
            ],
        },
    ]
    tools: Any = [
        {"name": "lookup", "description": "Look up", "input_schema": {"type": "object"}},
        {"name": "convert", "description": "Convert", "input_schema": {"type": "object"}, "defer_loading": True},
    ]
    thinking: Any = {"type": "enabled", "budget_tokens": 1024}
    reply = await sdk(client).messages.create(
        model="sonnet", max_tokens=2048, system=system, messages=history, tools=tools, thinking=thinking, top_k=5
    )
    sent = calls[0]["body"]
    assert sent["messages"] == history and sent["system"] == system
    assert sent["thinking"] == thinking and sent["top_k"] == 5 and sent["max_tokens"] == 2048
    assert sent["model"] == "claude-sonnet-4-5"
    assert [block.model_dump() for block in reply.content] == [
        THINK,
        {"type": "text", "text": "Done.", "citations": None},
    ]
    assert reply.usage.input_tokens == 40 and reply.usage.output_tokens == 9


def _thinking_then_tool(name: str, arguments: dict[str, Any]) -> httpx.Response:
    """A streamed Anthropic answer: a thinking block with its signature, then a tool call."""
    partial = json.dumps(arguments)
    start = {"type": "message_start", "message": {**message([], "", (30, 1)), "stop_reason": None}}
    return sse(
        [
            start,
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": THINK["thinking"]},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": THINK["signature"]},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {**tool_use(name, {}, "toolu_s"), "input": {}},
            },
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": partial}},
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}},
            {"type": "message_stop"},
        ]
    )


async def test_streamed_discovery_sends_thinking_back_with_its_signature(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    calls, replies = anthropic_upstream
    replies += [
        _thinking_then_tool("search_tools", {"query": "convert currency"}),
        _thinking_then_tool("finance__convert_currency", CONVERT),
        _text_stream("About 4.6 EUR."),
    ]
    client = await _client(gateway_factory)
    asked: Any = [{"role": "user", "content": "5 USD in EUR?"}]
    kinds: list[str] = []
    async with sdk(client).messages.stream(model="sonnet", max_tokens=2048, messages=asked) as stream:
        async for item in stream:
            if item.type == "content_block_delta":
                kinds.append(item.delta.type)
        final = await stream.get_final_message()
    assert final.content[-1].type == "text" and final.content[-1].text == "About 4.6 EUR."
    assert "thinking_delta" in kinds and "text_delta" in kinds
    second = calls[1]["body"]["messages"]
    assert second[1]["role"] == "assistant" and second[1]["content"][0] == THINK  # signature and all
    assert second[1]["content"][1] == tool_use("search_tools", {"query": "convert currency"}, "toolu_s")
    assert second[2]["content"][0]["type"] == "tool_result" and second[2]["content"][0]["tool_use_id"] == "toolu_s"
    third = calls[2]["body"]["messages"]
    assert third[3]["content"][0] == THINK and "EUR" in json.dumps(third[4]["content"])


def _text_stream(text: str) -> httpx.Response:
    start = {"type": "message_start", "message": {**message([], "", (50, 1)), "stop_reason": None}}
    return sse(
        [
            start,
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}},
            {"type": "message_stop"},
        ]
    )


async def test_client_tool_through_an_anthropic_upstream(anthropic_upstream: Any, gateway_factory: Any) -> None:
    calls, replies = anthropic_upstream
    replies += [
        httpx.Response(200, json=message([THINK, tool_use("get_local_time", {"zone": "UTC"})], "tool_use")),
        httpx.Response(200, json=message([{"type": "text", "text": "Noon."}], "end_turn")),
    ]
    client = await _client(gateway_factory)
    api = sdk(client)
    tools: Any = [{"name": "get_local_time", "description": "Local time", "input_schema": {"type": "object"}}]
    asked: Any = [{"role": "user", "content": "time?"}]
    reply = await api.messages.create(model="sonnet", max_tokens=2048, messages=asked, tools=tools)
    assert reply.stop_reason == "tool_use" and [block.type for block in reply.content] == ["thinking", "tool_use"]
    assert reply.content[0].signature == THINK["signature"]  # type: ignore[union-attr]
    asked += [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in reply.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "12:00"}]},
    ]
    done = await api.messages.create(model="sonnet", max_tokens=2048, messages=asked, tools=tools)
    assert done.content[0].type == "text" and done.content[0].text == "Noon."
    assert calls[1]["body"]["messages"] == asked
    upstream_error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    replies.append(httpx.Response(529, json=upstream_error))
    try:
        await api.messages.create(model="sonnet", max_tokens=16, messages=[{"role": "user", "content": "x"}])
    except anthropic.APIStatusError as exc:
        assert exc.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    else:
        raise AssertionError("an overloaded upstream must be an error")


async def test_streamed_thinking_before_a_client_tool_keeps_its_signature(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    _, replies = anthropic_upstream
    replies.append(_thinking_then_tool("get_local_time", {"zone": "UTC"}))
    client = await _client(gateway_factory)
    tools: Any = [{"name": "get_local_time", "description": "Local time", "input_schema": {"type": "object"}}]
    asked: Any = [{"role": "user", "content": "time?"}]
    async with sdk(client).messages.stream(model="sonnet", max_tokens=2048, messages=asked, tools=tools) as stream:
        final = await stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "tool_use"]
    assert final.content[0].model_dump() == THINK
    assert final.content[1].input == {"zone": "UTC"} and final.stop_reason == "tool_use"  # type: ignore[union-attr]
    wrong = await client.get("/v1/messages")
    assert wrong.status_code == 405 and wrong.json()["type"] == "error"


T1 = {"type": "thinking", "thinking": "A conversion: find a tool first.", "signature": "sig-one=="}
T2 = {"type": "thinking", "thinking": "convert_currency fits; call it.", "signature": "sig-two=="}
T3 = {"type": "thinking", "thinking": "It came to 4.6; say so.", "signature": "sig-three=="}
REDACTED = {"type": "redacted_thinking", "data": "ZW5jcnlwdGVkIHRoaW5raW5n"}
LOOKING = {"type": "text", "text": "Let me find a converter."}
ROUNDS = [  # a search, an MCP call, the answer: the first two the gateway answers itself
    ([T1, LOOKING, tool_use("search_tools", {"query": "convert currency"}, "toolu_a")], "tool_use"),
    ([T2, tool_use("finance__convert_currency", CONVERT, "toolu_b")], "tool_use"),
    ([REDACTED, T3, {"type": "text", "text": "About 4.6 EUR."}], "end_turn"),
]


async def test_every_rounds_thinking_streams_signed_as_the_plain_answer_gives_it(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    calls, replies = anthropic_upstream
    replies += [streamed_message(content, stop) for content, stop in ROUNDS]
    replies += [httpx.Response(200, json=message(content, stop)) for content, stop in ROUNDS]
    api = sdk(await _client(gateway_factory))
    elsewhere = {"type": "thinking", "thinking": "Another model's reasoning.", "signature": ""}  # as rendered
    asked: Any = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [elsewhere, {"type": "text", "text": "Hello."}]},
        {"role": "user", "content": "5 USD in EUR?"},
    ]
    blocks: list[tuple[str, int]] = []
    signatures: list[str] = []
    async with api.messages.stream(model="sonnet", max_tokens=2048, messages=asked) as stream:
        async for event in stream:
            if event.type in ("content_block_start", "content_block_stop"):
                blocks.append((event.type, event.index))
            elif event.type == "signature":
                signatures.append(event.signature)
        streamed = await stream.get_final_message()
    answer = {"type": "text", "text": "\n\nAbout 4.6 EUR."}
    content = [block.model_dump(exclude_none=True) for block in streamed.content]
    assert content == [T1, LOOKING, T2, REDACTED, T3, answer]
    assert signatures == ["sig-one==", "sig-two==", "sig-three=="]  # each in its own block, as the rounds ran
    assert blocks == [(kind, index) for index in range(6) for kind in ("content_block_start", "content_block_stop")]

    plain = await api.messages.create(model="sonnet", max_tokens=2048, messages=asked)
    thinking = [T1, T2, REDACTED, T3]
    text = {"type": "text", "text": LOOKING["text"] + answer["text"]}
    assert [block.model_dump(exclude_none=True) for block in plain.content] == [*thinking, text]
    assert [block.model_dump() for block in streamed.content if block.type != "text"] == thinking

    asked += [
        {"role": "assistant", "content": content},
        {"role": "user", "content": "Thanks."},
    ]
    replies.append(httpx.Response(200, json=message([{"type": "text", "text": "You're welcome."}], "end_turn")))
    await api.messages.create(model="sonnet", max_tokens=2048, messages=asked)
    unsigned_left_home = {**asked[1], "content": [{"type": "text", "text": "Hello."}]}  # Anthropic would refuse it
    assert calls[0]["body"]["messages"][1] == unsigned_left_home
    assert calls[-1]["body"]["messages"] == [asked[0], unsigned_left_home, *asked[2:]]  # every round's signed blocks
