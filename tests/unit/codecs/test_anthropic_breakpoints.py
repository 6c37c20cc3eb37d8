"""Prompt-cache breakpoints on an Anthropic upstream's body: placed where the client set none (after the tools, the
system prompt and on the last turn), never beside a client's own, never on what Anthropic refuses them on."""

from __future__ import annotations

import copy
from typing import Any

import httpx

from app.codecs.anthropic.breakpoints import with_breakpoints
from tests.support import load_example
from tests.support.anthropic import CLAUDE_PROVIDER, anthropic_config, message, sdk

MARK = {"type": "ephemeral"}
TOOLS: Any = [
    {"name": "a", "description": "A", "input_schema": {"type": "object"}},
    {"name": "b", "description": "B", "input_schema": {"type": "object"}},
    {"name": "c", "description": "C", "input_schema": {"type": "object"}, "defer_loading": True},
]


def _marked(blocks: list[Any]) -> list[int]:
    return [index for index, block in enumerate(blocks) if "cache_control" in block]


def test_breakpoints_go_after_the_tools_the_system_prompt_and_on_the_last_turn() -> None:
    thinking = {"type": "thinking", "thinking": "hm", "signature": "s"}
    body: Any = {
        "model": "m",
        "system": "Be exact.",
        "tools": TOOLS,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}, thinking]},
        ],
    }
    before = copy.deepcopy(body)
    placed = with_breakpoints(body)
    assert body == before  # the request's own blocks are shared: only copies are marked
    assert _marked(placed["tools"]) == [1]  # a deferred tool is not where the prefix ends
    assert placed["system"] == [{"type": "text", "text": "Be exact.", "cache_control": MARK}]
    assert placed["messages"][0] == body["messages"][0]
    assert _marked(placed["messages"][1]["content"]) == [0]  # never on a thinking block


def test_a_clients_own_breakpoints_are_left_alone() -> None:
    body: Any = {
        "model": "m",
        "system": [{"type": "text", "text": "Be exact."}],
        "tools": TOOLS,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": MARK}]}],
    }
    assert with_breakpoints(body) is body
    assert with_breakpoints({**body, "messages": [], "cache_control": MARK})["system"] == body["system"]


async def _sent(gateway_factory: Any, anthropic_upstream: Any, **provider: Any) -> Any:
    calls, replies = anthropic_upstream
    replies.append(httpx.Response(200, json=message([{"type": "text", "text": "Done."}], "end_turn")))
    config = anthropic_config(providers={"claude": {**CLAUDE_PROVIDER, **provider}})
    client, _ = await gateway_factory(config, targets={name: load_example(name).mcp for name in ("weather", "finance")})
    ask: Any = [{"role": "user", "content": "What time is it in Paris?"}]
    await sdk(client).messages.create(model="sonnet", max_tokens=64, system="Be exact.", messages=ask)
    return calls[-1]["body"]


async def test_an_anthropic_provider_places_them_by_default(gateway_factory: Any, anthropic_upstream: Any) -> None:
    sent = await _sent(gateway_factory, anthropic_upstream)
    rendered = [index for index, tool in enumerate(sent["tools"]) if not tool.get("defer_loading")]
    assert _marked(sent["tools"]) == [rendered[-1]], "the last tool the prompt renders (deferred ones are not)"
    assert _marked(sent["system"]) == [0]
    assert sent["messages"][-1]["content"] == [
        {"type": "text", "text": "What time is it in Paris?", "cache_control": MARK}
    ]


async def test_prompt_cache_off_places_none(gateway_factory: Any, anthropic_upstream: Any) -> None:
    sent = await _sent(gateway_factory, anthropic_upstream, prompt_cache="off")
    assert "cache_control" not in str(sent)
