"""Anthropic's Messages API as an upstream: scripted messages and streams, and a gateway routed to it."""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import httpx
import respx

from app.config import parse_config
from bench.cache_upstream import Refused, read_messages
from tests.support.gateway import GatewayFactory, example_targets

ANTHROPIC_UPSTREAM = "http://anthropic.test/v1"


def message(content: list[dict[str, Any]], stop: str, usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
    return {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def tool_use(name: str, arguments: dict[str, Any], ident: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": arguments}


def sse(events: list[dict[str, Any]]) -> httpx.Response:
    body = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


def streamed(
    text: str = "", tool: tuple[str, dict[str, Any]] | None = None, usage: tuple[int, int] = (10, 5)
) -> httpx.Response:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message([], "", (usage[0], 1)), "stop_reason": None}},
    ]
    if text:
        events += [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            *(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}}
                for word in re.findall(r"\S+\s*", text)
            ),
            {"type": "content_block_stop", "index": 0},
        ]
    if tool:
        arguments = json.dumps(tool[1])
        events += [
            {"type": "content_block_start", "index": 1, "content_block": {**tool_use(tool[0], {}, "toolu_s")}},
            *(
                {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": part}}
                for part in (arguments[:5], arguments[5:])
            ),
            {"type": "content_block_stop", "index": 1},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if tool else "end_turn"},
            "usage": {"output_tokens": usage[1]},
        },
        {"type": "message_stop"},
    ]
    return sse(events)


def streamed_message(content: list[dict[str, Any]], stop: str, usage: tuple[int, int] = (30, 7)) -> httpx.Response:
    """`content` streamed as Anthropic streams it, one block at a time: a thinking block's text in two
    `thinking_delta`s then its `signature_delta`, a redacted one whole at its start, text in a `text_delta`, a
    tool call's input in an `input_json_delta`."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message([], "", (usage[0], 1)), "stop_reason": None}}
    ]
    for index, block in enumerate(content):
        start: dict[str, Any] = dict(block)
        deltas: list[dict[str, Any]] = []
        if block["type"] == "thinking":
            text, half = block["thinking"], len(block["thinking"]) // 2
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": part} for part in (text[:half], text[half:])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            start, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
        elif block["type"] == "tool_use":
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events += [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": usage[1]}},
        {"type": "message_stop"},
    ]
    return sse(events)


def scripted_anthropic(
    router: respx.MockRouter, validate: bool = True
) -> tuple[list[dict[str, Any]], list[httpx.Response]]:
    """The Anthropic upstream on `router`: the calls it received (body and headers) and the replies it gives, in
    order (push httpx.Responses onto them). It refuses what the real API refuses (`validate`; off for a fuzz
    whose upstream answers are themselves invalid)."""
    calls: list[dict[str, Any]] = []
    replies: list[httpx.Response] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append({"body": json.loads(request.content), "headers": request.headers})
        try:
            if validate:
                read_messages(calls[-1]["body"])  # e.g. a reference to a tool not deferred
        except Refused as exc:
            return httpx.Response(400, json={"type": "error", "error": {"type": "invalid_request_error",
                                                                         "message": str(exc)}})  # fmt: skip
        return replies.pop(0)

    router.post(f"{ANTHROPIC_UPSTREAM}/messages").mock(side_effect=answer)
    return calls, replies


CLAUDE_PROVIDER = {
    "type": "anthropic",
    "base_url": ANTHROPIC_UPSTREAM,
    "api_key": "sk-ant-test",
    "max_tokens": 1024,
    "max_retries": 0,
}


def anthropic_config(**extra: Any) -> Any:
    return parse_config(
        {
            "providers": {"claude": CLAUDE_PROVIDER},
            "models": {"sonnet": {"provider": "claude", "model": "claude-sonnet-4-5"}},
            "mcpServers": {"weather": {"command": "unused"}, "finance": {"command": "unused", "defer_loading": True}},
            "mcp_limits": {"rebuild_interval_seconds": 0.01},  # as make_config's: a start never waits a second
            **extra,
        },
        environ={},
    )


async def anthropic_gateway(gateway_factory: GatewayFactory) -> Any:
    """A gateway whose one model is Claude behind the in-memory upstream; weather loaded, finance deferred."""
    targets = example_targets("weather", "finance")
    client, _ = await gateway_factory(anthropic_config(), targets=targets)
    return client


def sdk(client: httpx.AsyncClient, key: str = "unused") -> anthropic.AsyncAnthropic:
    """The official SDK reaching the gateway in memory, through the test client's ASGI transport."""
    return anthropic.AsyncAnthropic(base_url="http://gw", api_key=key, http_client=client, max_retries=0)
