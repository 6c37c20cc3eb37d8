"""An OpenAI-compatible upstream's answers reach a chat-completions client as the upstream gave them, plain and
streamed, over the corpus (tests/unit/codecs/corpus/openai_chat/answer_*.json): its id, model and time, text with
its logprobs, a refusal with its own, reasoning under the upstream's name for it, tool calls with their arguments
as written (JSON or not), the finish reason in the upstream's own word, every usage figure and detail, and the
upstream's own fields (a fingerprint, a tier, a vendor's `provider`).

What the gateway changes, stated: it adds `tool_discovery`, and a plain answer leaves out `logprobs` when there
are none. A stream says what chunks can (`streamable`): no annotations, nor the upstream's other top-level fields.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.round_trip import chat_chunks, completion_of_chunks, corpus, sse_data, streamable

ANSWERS = corpus("openai_chat", "answer")
LOOKUP = {"type": "function", "function": {"name": "lookup_order", "description": "Find an order.",
                                           "parameters": {"type": "object", "properties": {}}}}  # fmt: skip
ASK = {"model": "fast", "messages": [{"role": "user", "content": "order 7?"}], "tools": [LOOKUP], "logprobs": True}


def _sse(chunks: list[dict[str, Any]]) -> httpx.Response:
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", sorted(ANSWERS))
async def test_a_chat_answer_reaches_a_chat_client_as_it_came(
    upstream: Any, gateway_factory: Any, name: str, stream: bool
) -> None:
    answer = ANSWERS[name]
    upstream.script(_sse(chat_chunks(answer)) if stream else answer)
    client, _ = await gateway_factory()
    body = {**ASK, "stream": True, "stream_options": {"include_usage": True}} if stream else ASK
    reply = await client.post("/v1/chat/completions", json=body)
    assert reply.status_code == 200, reply.text
    if stream:
        assert completion_of_chunks(sse_data(reply.text)) == streamable(answer)
    else:
        got = reply.json()
        assert got.pop("tool_discovery") is not None
        choice = answer["choices"][0]
        choices = [{key: value for key, value in choice.items() if key != "logprobs" or value is not None}]
        assert got == {**answer, "choices": choices}


def test_the_stream_helpers_read_back_what_they_wrote() -> None:
    """The streamed case compares through these: one without the other would prove nothing."""
    for answer in ANSWERS.values():
        assert completion_of_chunks(chat_chunks(answer)) == streamable(answer)
    assert any(streamable(answer) != answer for answer in ANSWERS.values())
