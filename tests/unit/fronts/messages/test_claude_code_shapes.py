"""What Claude Code (2.1.3xx) sends, in the shapes captured from the real program: a `system` entry inside
`messages`, `thinking: {"type": "adaptive"}`, `context_management`, `output_config`, `metadata`, `cache_control`
on system entries and tool results, the `anthropic-beta` header, and its own tool search (a `ToolSearch` result of
`tool_reference` blocks loading a tool it sent with `defer_loading`). Each reaches an Anthropic upstream as sent and
an OpenAI-compatible one as the nearest chat request; and an Anthropic upstream's `ping` reaches a stream's client."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from tests.support import Upstream, completion, example_targets, make_config
from tests.support.anthropic import anthropic_config, message, sse, tool_use

BETAS = "claude-code-20250219,context-management-2025-06-27,mid-conversation-tool-changes-2026-07-01"
HEADERS = {"anthropic-version": "2023-06-01", "anthropic-beta": BETAS}
SYSTEM = [
    {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"},
    {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}},
]
PROMPT = {
    "role": "user",
    "content": [
        {"type": "text", "text": "<system-reminder>\nToday's date is 2026-11-25.\n</system-reminder>"},
        {"type": "text", "text": "Count the words in: one two three"},
    ],
}
ENVIRONMENT = {  # Claude Code's mid-conversation system entry, right after the prompt
    "role": "system",
    "content": [{"type": "text", "text": "# Environment\n - Shell: bash", "cache_control": {"type": "ephemeral"}}],
}
BETA_FIELDS = {
    "thinking": {"type": "adaptive", "display": "omitted"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "output_config": {"effort": "high"},
}
COUNT = "mcp__textkit__count_words"
TOOLS = [
    {"name": "Bash", "description": "Run a shell command", "input_schema": {"type": "object"}},
    {"name": "ToolSearch", "description": "Fetch deferred tools", "input_schema": {"type": "object"}},
    {"name": "DeferredToolPlaceholder", "description": "never call", "input_schema": {"type": "object"},
     "defer_loading": True},
]  # fmt: skip
COUNT_TOOL = {"name": COUNT, "description": "Count words", "input_schema": {"type": "object"}, "defer_loading": True}
SEARCHED = [  # the ToolSearch round trip, as Claude Code sends it back
    {"role": "assistant", "content": [tool_use("ToolSearch", {"query": f"select:{COUNT}"}, "toolu_s")]},
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_s",
                "content": [{"type": "tool_reference", "tool_name": COUNT}],
            },
            {"type": "text", "text": "Tool loaded.", "cache_control": {"type": "ephemeral"}},
        ],
    },
]


def claude_code_body(messages: list[dict[str, Any]], tools: list[dict[str, Any]], model: str) -> dict[str, Any]:
    metadata = {"user_id": json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": "s-1"})}
    return {"model": model, "messages": messages, "system": SYSTEM, "tools": tools, "metadata": metadata,
            "max_tokens": 32000, **BETA_FIELDS, "stream": False}  # fmt: skip


async def test_an_anthropic_upstream_gets_the_system_entry_beta_fields_and_header_as_sent(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    calls, replies = anthropic_upstream
    replies.append(httpx.Response(200, json=message([{"type": "text", "text": "Hello."}], "end_turn")))
    weather_only = {"weather": {"command": "unused"}}
    client, _ = await gateway_factory(anthropic_config(mcpServers=weather_only), targets=example_targets("weather"))
    body = claude_code_body([PROMPT, ENVIRONMENT], TOOLS, "sonnet")
    response = await client.post("/v1/messages?beta=true", json=body, headers=HEADERS)
    assert response.status_code == 200, response.text
    assert response.json()["content"] == [{"type": "text", "text": "Hello."}]
    sent, headers = calls[0]["body"], calls[0]["headers"]
    assert sent["messages"] == [PROMPT, ENVIRONMENT] and sent["system"] == SYSTEM
    assert {key: sent[key] for key in BETA_FIELDS} == BETA_FIELDS and sent["metadata"] == body["metadata"]
    assert headers["anthropic-beta"] == BETAS and headers["x-api-key"] == "sk-ant-test"
    placeholder = [tool for tool in sent["tools"] if tool["name"] == "DeferredToolPlaceholder"]
    assert [tool.get("defer_loading") for tool in placeholder] in ([], [True])  # deferred: never rendered


async def test_configured_betas_come_first_and_each_beta_goes_once(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    calls, replies = anthropic_upstream
    replies.append(httpx.Response(200, json=message([{"type": "text", "text": "Hi."}], "end_turn")))
    config = anthropic_config(mcpServers={})
    config.providers["claude"].extra_headers = {"Anthropic-Beta": "effort-2025-11-24,context-management-2025-06-27"}
    client, _ = await gateway_factory(config, targets={})
    body = {"model": "sonnet", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    assert (await client.post("/v1/messages", json=body, headers=HEADERS)).status_code == 200
    assert calls[0]["headers"]["anthropic-beta"] == (
        "effort-2025-11-24,context-management-2025-06-27,claude-code-20250219,mid-conversation-tool-changes-2026-07-01"
    )


async def test_a_chat_upstream_gets_the_system_entry_in_place_and_no_beta_fields(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.script(completion("Hello."))
    client, _ = await gateway_factory(make_config(mcpServers={}, tool_sets={}))
    with caplog.at_level(logging.DEBUG, logger="toolsift.upstream"):
        body = claude_code_body([PROMPT, ENVIRONMENT], TOOLS, "fast")
        response = await client.post("/v1/messages?beta=true", json=body, headers=HEADERS)
    assert response.status_code == 200, response.text
    sent = upstream.requests[0]
    assert [message["role"] for message in sent["messages"]] == ["system", "user", "system"]
    assert sent["messages"][2] == {
        "role": "system",
        "content": [{"type": "text", "text": "# Environment\n - Shell: bash"}],
    }
    assert not set(BETA_FIELDS) & set(sent) and "anthropic-beta" not in upstream.headers[0]
    dropped = [record.getMessage() for record in caplog.records if "left out" in record.getMessage()]
    assert len(dropped) == 1, "one debug line for the request's one upstream call"
    assert all(name in dropped[0] for name in ("context_management", "output_config", "thinking", "anthropic-beta"))


async def test_a_tool_its_own_tool_search_loaded_is_callable_and_comes_back_to_it(
    upstream: Upstream, gateway_factory: Any
) -> None:
    upstream.script(completion(calls=[(COUNT, {"text": "one two three"})]))
    client, _ = await gateway_factory(make_config(mcpServers={}, tool_sets={}))
    body = claude_code_body([PROMPT, ENVIRONMENT, *SEARCHED], [*TOOLS, COUNT_TOOL], "fast")
    response = await client.post("/v1/messages", json=body, headers=HEADERS)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["stop_reason"] == "tool_use"
    assert reply["content"][-1]["name"] == COUNT and reply["content"][-1]["input"] == {"text": "one two three"}
    assert COUNT in upstream.tool_names(0) and "DeferredToolPlaceholder" not in upstream.tool_names(0)
    result = next(message for message in upstream.requests[0]["messages"] if message["role"] == "tool")
    assert result["content"] == f"Tool {COUNT} loaded: it can be called now."


async def test_an_anthropic_upstream_gets_the_referenced_tool_deferred_as_the_reference_expands_it(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    calls, replies = anthropic_upstream
    replies.append(httpx.Response(200, json=message([tool_use(COUNT, {"text": "a b"})], "tool_use")))
    client, _ = await gateway_factory(anthropic_config(mcpServers={}), targets={})
    body = claude_code_body([PROMPT, ENVIRONMENT, *SEARCHED], [*TOOLS, COUNT_TOOL], "sonnet")
    response = await client.post("/v1/messages", json=body, headers=HEADERS)
    assert response.json()["content"][-1]["name"] == COUNT
    sent = calls[0]["body"]
    assert COUNT_TOOL in sent["tools"] and sent["messages"] == [PROMPT, ENVIRONMENT, *SEARCHED]


async def test_an_anthropic_upstreams_pings_reach_the_stream(anthropic_upstream: Any, gateway_factory: Any) -> None:
    _, replies = anthropic_upstream
    start = {"type": "message_start", "message": {**message([], "", (10, 1)), "stop_reason": None}}
    replies.append(
        sse(
            [
                start,
                {"type": "ping"},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi."}},
                {"type": "ping"},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
                {"type": "message_stop"},
            ]
        )
    )
    client, _ = await gateway_factory(anthropic_config(mcpServers={}), targets={})
    body = {"model": "sonnet", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    response = await client.post("/v1/messages", json=body)
    kinds = [line[len("event: ") :] for line in response.text.splitlines() if line.startswith("event: ")]
    assert kinds == [
        "message_start", "ping", "content_block_start", "content_block_delta", "ping", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip


async def test_count_tokens_takes_the_same_shapes(gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(mcpServers={}, tool_sets={}))
    body = claude_code_body([PROMPT, ENVIRONMENT, *SEARCHED], [*TOOLS, COUNT_TOOL], "fast")
    del body["max_tokens"]
    counted = await client.post("/v1/messages/count_tokens", json=body, headers=HEADERS)
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 50


async def test_a_wrong_role_is_still_refused_in_anthropics_shape(gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(mcpServers={}, tool_sets={}))
    body = {"model": "fast", "max_tokens": 64, "messages": [{"role": "tool", "content": "x"}]}
    refused = await client.post("/v1/messages", json=body, headers=HEADERS)
    assert refused.status_code == 400
    assert refused.json()["type"] == "error" and refused.json()["error"]["type"] == "invalid_request_error"
    assert "messages[0].role" in refused.json()["error"]["message"]
