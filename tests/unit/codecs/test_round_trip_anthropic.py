"""An Anthropic upstream's answers reach a Messages client as the upstream gave them, plain and streamed, over
the corpus (tests/unit/codecs/corpus/anthropic/answer_*.json): its id, thinking with signatures, redacted
thinking, text with its citations, tool calls with their own fields, the stop reason in Anthropic's own word
with its stop sequence and details, and every usage figure (cache writes and reads, their breakdown, server tool
use, a null count as null).

What the gateway changes, stated: the model is the one the client asked for (its alias), `tool_discovery` is
added, and a stream's text carries no citations and comes as one block for a run of text blocks (the engine
streams text as text).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.anthropic import anthropic_config, sse
from tests.support.round_trip import anthropic_events, corpus, message_of_stream, sse_data

ANSWERS = corpus("anthropic", "answer")
LOOKUP = {"name": "lookup_order", "description": "Find an order.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}}}  # fmt: skip
ASK = {"model": "sonnet", "max_tokens": 100, "messages": [{"role": "user", "content": "count"}], "tools": [LOOKUP],
       "stop_sequences": ["###"]}  # fmt: skip


def expected(answer: dict[str, Any], stream: bool) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in answer["content"]:
        if stream and block["type"] == "text" and content and content[-1]["type"] == "text":
            content[-1]["text"] += block["text"]  # streamed, a run of text is one block
        elif stream and block["type"] == "text":
            content.append({"type": "text", "text": block["text"]})
        else:
            content.append(block)
    return {**answer, "model": ASK["model"], "content": content}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", sorted(ANSWERS))
async def test_an_anthropic_answer_reaches_a_messages_client_as_it_came(
    anthropic_upstream: Any, gateway_factory: Any, name: str, stream: bool
) -> None:
    _, replies = anthropic_upstream
    answer = ANSWERS[name]
    replies.append(sse(anthropic_events(answer)) if stream else httpx.Response(200, json=answer))
    client, _ = await gateway_factory(anthropic_config())
    reply = await client.post("/v1/messages", json={**ASK, "stream": stream})
    assert reply.status_code == 200, reply.text
    got = message_of_stream(sse_data(reply.text)) if stream else reply.json()
    assert got.pop("tool_discovery", None) is not None or stream
    assert got == expected(answer, stream)


def test_the_stream_helpers_read_back_what_they_wrote() -> None:
    """The streamed case compares through these two: one without the other would prove nothing."""
    for answer in ANSWERS.values():
        assert message_of_stream(anthropic_events(answer)) == answer
