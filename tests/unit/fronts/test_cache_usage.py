"""The upstream's prompt-cache reads and writes, kept apart from input tokens: each provider's codec in, each front's
out, plain and streamed; and the accounting beside them (tool_discovery, the console's recent requests, /metrics).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai

from app.core.catalog import estimate_tokens
from tests.support import load_example
from tests.support.anthropic import CLAUDE_PROVIDER, message, sdk, sse
from tests.support.gateway import make_config
from tests.support.responses_upstream import RESPONSES_PROVIDER, response, scripted_responses
from tests.support.responses_upstream import message as responses_message
from tests.support.upstream import completion, mock_upstreams

# What an Anthropic upstream bills: 10 uncached, 200 written to the cache, 300 read from it.
ANTHROPIC_USAGE = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 200,
                   "cache_read_input_tokens": 300}  # fmt: skip
MESSAGES_USAGE = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 200,
                  "cache_read_input_tokens": 300}  # fmt: skip
UP = {"base_url": "http://upstream.test/v1", "api_key": "sk-test-secret", "max_retries": 0, "deferral": "tools"}
PROVIDERS = {"up": UP, "claude": CLAUDE_PROVIDER, "resp": RESPONSES_PROVIDER}
MODELS = {"fast": {"provider": "up", "model": "gpt-test-mini"}, "sonnet": {"provider": "claude", "model": "c-4"},
          "codex": {"provider": "resp", "model": "gpt-5"}}  # fmt: skip


async def _gateway(gateway_factory: Any, deferral: str = "tools") -> tuple[httpx.AsyncClient, Any]:
    config = make_config(providers={**PROVIDERS, "up": {**UP, "deferral": deferral}}, models=MODELS)
    targets = {name: load_example(name).mcp for name in ("weather", "notes", "finance", "textkit")}
    return await gateway_factory(config, targets=targets)  # type: ignore[no-any-return]


def _anthropic(router: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    body = {**message([{"type": "text", "text": "Done."}], "end_turn"), "usage": ANTHROPIC_USAGE}

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(json.loads(request.content))
        if not json.loads(request.content).get("stream"):
            return httpx.Response(200, json=body)
        start = {**body, "content": [], "stop_reason": None, "usage": {**ANTHROPIC_USAGE, "output_tokens": 1}}
        return sse([
            {"type": "message_start", "message": start},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Done."}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ])  # fmt: skip

    router.post(f"{CLAUDE_PROVIDER['base_url']}/messages").mock(side_effect=answer)
    return calls


async def test_an_anthropic_upstreams_cache_reaches_every_front(gateway_factory: Any) -> None:
    with mock_upstreams() as router:
        _anthropic(router)
        client, _ = await _gateway(gateway_factory)
        ask: Any = [{"role": "user", "content": "hi"}]
        reply = await sdk(client).messages.create(model="sonnet", max_tokens=64, messages=ask)
        assert {key: getattr(reply.usage, key) for key in MESSAGES_USAGE} == MESSAGES_USAGE
        async with sdk(client).messages.stream(model="sonnet", max_tokens=64, messages=ask) as stream:
            final = await stream.get_final_message()
        assert {key: getattr(final.usage, key) for key in MESSAGES_USAGE} == MESSAGES_USAGE

        chat = (await client.post("/v1/chat/completions", json={"model": "sonnet", "messages": ask})).json()
        assert chat["usage"]["prompt_tokens"] == 510
        assert chat["usage"]["prompt_tokens_details"] == {"cached_tokens": 300, "cache_write_tokens": 200}
        assert chat["tool_discovery"]["cache_read_tokens"] == 300
        assert chat["tool_discovery"]["cache_write_tokens"] == 200

        gpt = openai.AsyncOpenAI(base_url="http://gw/v1", api_key="x", http_client=client)
        chunks = await gpt.chat.completions.create(
            model="sonnet", messages=ask, stream=True, stream_options={"include_usage": True}
        )
        last = [chunk async for chunk in chunks][-1]
        assert last.usage is not None and last.usage.prompt_tokens_details is not None
        assert (
            last.usage.prompt_tokens_details.cached_tokens,
            last.usage.prompt_tokens_details.cache_write_tokens,
        ) == (
            300,
            200,
        )

        answered = (await client.post("/v1/responses", json={"model": "sonnet", "input": "hi"})).json()
        assert answered["usage"]["input_tokens"] == 510
        assert answered["usage"]["input_tokens_details"] == {"cached_tokens": 300, "cache_write_tokens": 200}
        events = await gpt.responses.create(model="sonnet", input="hi", stream=True)
        completed = [event async for event in events][-1]
        assert completed.type == "response.completed" and completed.response.usage is not None
        details = completed.response.usage.input_tokens_details
        assert (details.cached_tokens, details.cache_write_tokens) == (300, 200)

        metrics = (await client.get("/metrics")).text
        assert 'toolsift_upstream_cached_tokens_total{identity="anonymous"} 1800.0' in metrics  # six answers
        assert 'toolsift_upstream_cache_write_tokens_total{identity="anonymous"} 1200.0' in metrics


async def test_an_openai_upstreams_cache_reaches_the_messages_front(gateway_factory: Any) -> None:
    details = {"cached_tokens": 300, "cache_write_tokens": 50, "audio_tokens": 0}
    reply = completion("Done.", usage=(400, 5))
    reply["usage"]["prompt_tokens_details"] = details
    with mock_upstreams() as router:
        router.post("http://upstream.test/v1/chat/completions").mock(return_value=httpx.Response(200, json=reply))
        client, _ = await _gateway(gateway_factory)
        ask: Any = [{"role": "user", "content": "hi"}]
        answer = await sdk(client).messages.create(model="fast", max_tokens=64, messages=ask)
        assert (answer.usage.input_tokens, answer.usage.cache_read_input_tokens) == (50, 300)
        assert answer.usage.cache_creation_input_tokens == 50
        gpt = openai.AsyncOpenAI(base_url="http://gw/v1", api_key="x", http_client=client)
        chat = await gpt.chat.completions.create(model="fast", messages=ask)
        assert chat.usage is not None and chat.usage.prompt_tokens_details is not None
        assert chat.usage.prompt_tokens_details.model_dump(exclude_none=True) == details  # as the upstream gave it


async def test_a_responses_upstreams_cache_reaches_the_messages_and_chat_fronts(gateway_factory: Any) -> None:
    with mock_upstreams() as router:
        _, replies = scripted_responses(router)
        for _ in range(2):
            done = response(responses_message("Done."), usage=(400, 5))
            done["usage"]["input_tokens_details"] = {"cached_tokens": 256, "cache_write_tokens": 100}
            replies.append(done)
        client, _ = await _gateway(gateway_factory)
        ask: Any = [{"role": "user", "content": "hi"}]
        answer = await sdk(client).messages.create(model="codex", max_tokens=64, messages=ask)
        usage = answer.usage
        assert (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (44, 256, 100)
        chat = (await client.post("/v1/chat/completions", json={"model": "codex", "messages": ask})).json()
        assert chat["usage"]["prompt_tokens_details"] == {"cached_tokens": 256, "cache_write_tokens": 100}


async def test_discovery_reports_tool_tokens_kept_out_and_cache_hits_lost(gateway_factory: Any) -> None:
    """A search that loads a tool changes the tools array, so the next round cannot read the conversation after
    the tools from the cache: the previous round's prompt less its tools, counted beside the tokens kept out."""
    sent: list[dict[str, Any]] = []
    replies = [
        completion(calls=[("search_tools", {"query": "convert currency"})], usage=(3000, 5)),
        completion("Done.", usage=(3500, 5)),
        completion("Again.", usage=(3600, 5)),
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=replies.pop(0))

    with mock_upstreams() as router:
        router.post("http://upstream.test/v1/chat/completions").mock(side_effect=answer)
        client, gateway = await _gateway(gateway_factory)
        body = {"model": "fast", "messages": [{"role": "user", "content": "Convert 5 USD to EUR"}]}
        found = (await client.post("/v1/chat/completions", json=body)).json()["tool_discovery"]
        again = (await client.post("/v1/chat/completions", json=body)).json()["tool_discovery"]
        recent = gateway.recent.latest()  # the console's recent requests
        metrics = (await client.get("/metrics")).text

    first_tools = [tool["function"] for tool in sent[0]["tools"]]
    assert [tool["function"]["name"] for tool in sent[1]["tools"]] != [tool["name"] for tool in first_tools]
    lost = 3000 - sum(estimate_tokens(dict(tool)) for tool in first_tools)
    assert found["cache_hits_lost"] == lost > 0
    assert found["tool_tokens_kept_out"] > 0
    assert (found["cache_read_tokens"], found["cache_write_tokens"]) == (None, None)  # not reported
    assert again["cache_hits_lost"] == 0 and again["tool_tokens_kept_out"] > 0  # one round, tools unchanged
    assert [item["cache_hits_lost"] for item in recent] == [0, lost]
    assert f"toolsift_cache_hits_lost_total {float(lost)}" in metrics


async def test_cache_writes_are_not_taken_for_input(gateway_factory: Any) -> None:
    """An Anthropic answer's cache writes were once folded into its input tokens and reported as 0."""
    with mock_upstreams() as router:
        _anthropic(router)
        client, _ = await _gateway(gateway_factory)
        raw = await client.post(
            "/v1/messages", json={"model": "sonnet", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
        )
    usage = anthropic.types.Message.model_validate(raw.json()).usage
    assert usage.input_tokens == 10 and usage.cache_creation_input_tokens == 200


async def test_a_fixed_tools_array_loses_no_cache_hits(gateway_factory: Any) -> None:
    """With `call_tool` (a chat upstream's default) a search never changes the tools array: nothing is lost."""
    replies = [completion(calls=[("search_tools", {"query": "convert currency"})], usage=(3000, 5)),
               completion("Done.", usage=(3500, 5))]  # fmt: skip
    with mock_upstreams() as router:
        router.post("http://upstream.test/v1/chat/completions").mock(
            side_effect=lambda request: httpx.Response(200, json=replies.pop(0))
        )
        client, _ = await _gateway(gateway_factory, "call_tool")
        body = {"model": "fast", "messages": [{"role": "user", "content": "Convert 5 USD to EUR"}]}
        found = (await client.post("/v1/chat/completions", json=body)).json()["tool_discovery"]
    assert found["cache_hits_lost"] == 0 and found["tool_tokens_kept_out"] > 0
