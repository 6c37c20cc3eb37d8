"""An Anthropic upstream's answer reaches the client as it was given: its message id, a `stop_sequence` stop with
the sequence, and the cache's writes and reads apart from the other input tokens. Through `/v1/messages` all of
them, plain and streamed; through the chat and Responses fronts wherever their formats have the field."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.anthropic import anthropic_config, sdk, sse

USAGE = {"input_tokens": 17, "output_tokens": 4, "cache_creation_input_tokens": 7, "cache_read_input_tokens": 5}
MESSAGE = {
    "id": "msg_abc", "type": "message", "role": "assistant", "model": "claude-test",
    "content": [{"type": "text", "text": "Counted to three"}],
    "stop_reason": "stop_sequence", "stop_sequence": "###", "usage": USAGE,
}  # fmt: skip


def _streamed() -> httpx.Response:
    start = {**MESSAGE, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**USAGE, "output_tokens": 1}}  # fmt: skip
    return sse([
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Counted to three"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "stop_sequence", "stop_sequence": "###"},
         "usage": {"output_tokens": 4}},
        {"type": "message_stop"},
    ])  # fmt: skip


def _reply(stream: bool) -> httpx.Response:
    return _streamed() if stream else httpx.Response(200, json=MESSAGE)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_messages_get_the_id_the_stop_sequence_and_the_cache_figures(
    anthropic_upstream: Any, gateway_factory: Any, stream: bool
) -> None:
    _, replies = anthropic_upstream
    replies.append(_reply(stream))
    client, _ = await gateway_factory(anthropic_config())
    api = sdk(client)
    ask: Any = {"model": "sonnet", "max_tokens": 100, "messages": [{"role": "user", "content": "count"}],
                "stop_sequences": ["###"]}  # fmt: skip
    if stream:
        async with api.messages.stream(**ask) as events:
            answer = await events.get_final_message()
    else:
        answer = await api.messages.create(**ask)
    assert answer.id == "msg_abc"
    assert (answer.stop_reason, answer.stop_sequence) == ("stop_sequence", "###")
    usage = answer.usage
    assert (usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (17, 7, 5)
    assert usage.output_tokens == 4


def _data(text: str) -> list[Any]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_chat_and_responses_get_the_fields_their_formats_have(
    anthropic_upstream: Any, gateway_factory: Any, stream: bool
) -> None:
    """Chat has the id, a finish reason (a stop sequence's is `stop`) and the cache's reads and writes in
    `prompt_tokens_details`; Responses the cache's in `input_tokens_details` (its response ids are the gateway's,
    which stores it, and it has no stop sequence)."""
    _, replies = anthropic_upstream
    replies += [_reply(stream), _reply(stream)]
    client, _ = await gateway_factory(anthropic_config())
    body: Any = {"model": "sonnet", "messages": [{"role": "user", "content": "count"}], "stop": ["###"]}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    chat = await client.post("/v1/chat/completions", json=body)
    if stream:
        chunks = _data(chat.text)
        assert {chunk["id"] for chunk in chunks} == {"msg_abc"}
        assert [chunk["choices"][0]["finish_reason"] for chunk in chunks if chunk["choices"]][-1] == "stop"
        usage = chunks[-1]["usage"]
    else:
        assert chat.json()["id"] == "msg_abc" and chat.json()["choices"][0]["finish_reason"] == "stop"
        usage = chat.json()["usage"]
    assert usage["prompt_tokens"] == 29 and usage["completion_tokens"] == 4
    assert usage["prompt_tokens_details"] == {"cached_tokens": 5, "cache_write_tokens": 7}
    responses = await client.post("/v1/responses", json={"model": "sonnet", "input": "count", "stream": stream})
    final = _data(responses.text)[-1]["response"] if stream else responses.json()
    assert final["status"] == "completed" and final["output"][-1]["content"][0]["text"] == "Counted to three"
    figures = final["usage"]
    assert figures["input_tokens"] == 29 and figures["output_tokens"] == 4
    assert figures["input_tokens_details"] == {"cached_tokens": 5, "cache_write_tokens": 7}
