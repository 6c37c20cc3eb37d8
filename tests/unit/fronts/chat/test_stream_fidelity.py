"""What real clients read from a stream: reasoning deltas, logprobs, the upstream's fingerprint and service tier,
`content: null` on a round that only calls tools, and `GET /v1/models/{id}`."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from tests.support import Upstream, chat_body, completion, make_config

BASE = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "up-model"}
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order by its id.",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    },
}


def sdk(client: httpx.AsyncClient) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url="http://gw/v1", api_key="unused", http_client=client, max_retries=0)


def stream_of(*deltas: dict[str, Any], extra: dict[str, Any] | None = None, usage: bool = True) -> httpx.Response:
    """An upstream SSE answer of a reasoning-capable model: one chunk per delta (with its own choice fields)."""
    chunks = []
    for delta in deltas:
        choice = {"index": 0, "delta": delta.get("delta", {}), "finish_reason": delta.get("finish_reason")}
        if "logprobs" in delta:
            choice["logprobs"] = delta["logprobs"]
        chunks.append({**BASE, **(extra or {}), "choices": [choice]})
    if usage:
        chunks.append(
            {**BASE, "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}
        )
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_are_forwarded_in_streams(upstream: Upstream, gateway_factory: Any, field: str) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        stream_of(
            {"delta": {"role": "assistant", field: "Think"}},
            {"delta": {field: "ing."}},
            {"delta": {"content": "Answer."}},
            {"finish_reason": "stop"},
        )
    )
    stream = await sdk(client).chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "x"}], stream=True
    )
    reasoning, content = "", ""
    async for chunk in stream:
        for choice in chunk.choices:
            reasoning += (choice.delta.model_extra or {}).get(field) or ""
            content += choice.delta.content or ""
    assert (reasoning, content) == ("Thinking.", "Answer.")

    first = completion(calls=[("search_tools", {"query": "notes"})])  # plain answers keep theirs too
    first["choices"][0]["message"][field] = "Let me look."
    upstream.script(first, completion("Done."))
    answer = await sdk(client).chat.completions.create(model="fast", messages=[{"role": "user", "content": "x"}])
    assert answer.choices[0].message.content == "Done."
    assert (answer.choices[0].message.model_extra or {}).get(field) == "Let me look."
    assert upstream.requests[2]["messages"][-2][field] == "Let me look.", "sent back with its tool calls"


async def test_a_tool_only_round_starts_with_content_null(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": ""}}
    upstream.script(
        stream_of(
            {"delta": {"role": "assistant", "tool_calls": [call]}},
            {"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"id": "A7"}'}}]}},
            {"finish_reason": "tool_calls"},
        )
    )
    async with sdk(client).chat.completions.stream(
        model="fast",
        messages=[{"role": "user", "content": "where is A7?"}],
        tools=[LOOKUP],  # type: ignore[list-item]
    ) as stream:
        final = await stream.get_final_completion()
    message = final.choices[0].message
    assert message.content is None
    assert message.tool_calls is not None and message.tool_calls[0].function.name == "lookup_order"
    assert json.loads(message.tool_calls[0].function.arguments) == {"id": "A7"}
    assert final.choices[0].finish_reason == "tool_calls"

    upstream.script(stream_of({"delta": {"role": "assistant", "content": ""}}, {"delta": {"content": "Hi"}}, {}))
    response = await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    first = json.loads(response.text.split("\n\n")[0].removeprefix("data: "))
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}, "text answers start with ''"


async def test_logprobs_fingerprint_and_service_tier_are_kept(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    token = {"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}
    meta = {"system_fingerprint": "fp_123", "service_tier": "default"}
    upstream.script(
        stream_of(
            {"delta": {"role": "assistant", "content": ""}},
            {"delta": {"content": "Hi"}, "logprobs": {"content": [token], "refusal": None}},
            {"finish_reason": "stop"},
            extra=meta,
        )
    )
    stream = await sdk(client).chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "x"}], stream=True, logprobs=True
    )
    chunks = [chunk async for chunk in stream]
    assert upstream.requests[0]["logprobs"] is True
    with_text = [chunk for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]
    assert with_text[0].choices[0].logprobs is not None
    assert (
        with_text[0].choices[0].logprobs.content is not None
        and with_text[0].choices[0].logprobs.content[0].token == "Hi"
    )
    assert {chunk.system_fingerprint for chunk in chunks} == {"fp_123"}
    assert {chunk.service_tier for chunk in chunks} == {"default"}

    plain = completion("Hi")
    plain.update(meta)
    plain["choices"][0]["logprobs"] = {"content": [token], "refusal": None}
    upstream.script(plain)
    answer = await sdk(client).chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "x"}], logprobs=True
    )
    assert answer.system_fingerprint == "fp_123" and answer.service_tier == "default"
    plain_logprobs = answer.choices[0].logprobs
    assert plain_logprobs is not None and plain_logprobs.content is not None
    assert plain_logprobs.content[0].token == "Hi"


async def test_get_model_by_id(upstream: Upstream, gateway_factory: Any) -> None:
    two = {name: {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"} for name in ("up", "other")}
    client, _ = await gateway_factory(make_config(providers=two))  # two providers: no default one
    model = await sdk(client).models.retrieve("fast")
    assert (model.id, model.object, model.owned_by) == ("fast", "model", "up")
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk(client).models.retrieve("nope")
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "model_not_found" and "fast" in error["message"]

    client, _ = await gateway_factory()  # one provider is the default
    model = await sdk(client).models.retrieve("any-upstream-model")
    assert (model.id, model.owned_by) == ("any-upstream-model", "up"), "the default provider serves any name"
