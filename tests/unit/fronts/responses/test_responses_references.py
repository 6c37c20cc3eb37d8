"""Responses items that point elsewhere: `item_reference` resolved from the caller's own stored responses (as the
Vercel AI SDK sends them with `store` on), and the reasoning an upstream gives of its own, sealed in a reasoning
item's `encrypted_content` (`include`) and sent back upstream with its turn; `reasoning.summary` echoed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.codecs.responses.items import SEALED, messages_of
from app.core.model import Native, ResponseMeta, StopReason, ToolCall
from app.engine.events import ClientToolCall, ContentDelta, DiscoveryStats, Finished, RoundFinished, RoundStarted
from app.fronts.responses.items import ResponseCall
from app.fronts.responses.stream import ResponsesStream
from app.fronts.responses.wire import parse_responses_request
from tests.support import Upstream, completion, make_config
from tests.support.upstream import events

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "description": "Look up an order.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
}
DETAILS = [{"type": "reasoning.encrypted", "data": "opaque-upstream-blob", "index": 0}]


async def create(client: Any, key: str = "unused", **body: Any) -> Any:
    return await client.post(
        "/v1/responses", json={"model": "fast", **body}, headers={"authorization": f"Bearer {key}"}
    )


async def test_item_references_resolve_from_the_callers_stored_responses(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": ["key-alice", "key-bob"]}))
    upstream.script(completion("Let me look that up.", calls=[("lookup_order", {"id": "o-1"})]))
    made = (await create(client, "key-alice", input="where is o-1?", tools=[LOOKUP])).json()
    text, call = made["output"]
    assert (text["type"], call["type"]) == ("message", "function_call")
    follow_up = [
        {"role": "user", "content": "where is o-1?"},
        {"type": "item_reference", "id": text["id"]},
        {"type": "item_reference", "id": call["id"]},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "shipped"},
    ]
    upstream.script(completion("It shipped."))
    answered = await create(client, "key-alice", input=follow_up, tools=[LOOKUP])
    assert answered.status_code == 200 and answered.json()["output"][0]["content"][0]["text"] == "It shipped."
    messages = upstream.requests[-1]["messages"]
    assert messages[1]["role"] == "assistant" and messages[1]["content"] == "Let me look that up."
    assert messages[1]["tool_calls"][0]["id"] == call["call_id"]
    assert messages[2] == {"role": "tool", "content": "shipped", "tool_call_id": call["call_id"]}

    for key, ident in (("key-bob", text["id"]), ("key-alice", "msg_unknown"), ("key-alice", text["id"] + "0")):
        refused = await create(client, key, input=[follow_up[0], {"type": "item_reference", "id": ident}])
        assert refused.status_code == 400, "another caller's item, or none, is not found"
        error = refused.json()["error"]
        assert error["param"] == "input[1].id" and f"Item with id '{ident}' not found" in error["message"]
    assert len(upstream.requests) == 2, "nothing went upstream for them"


async def test_an_item_of_an_unstored_response_is_not_found(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("Not kept."))
    made = (await create(client, input="hi", store=False)).json()
    refused = await create(client, input=[{"type": "item_reference", "id": made["output"][0]["id"]}])
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "item_not_found"


def reasoning_reply() -> dict[str, Any]:
    reply = completion("Checking.", calls=[("lookup_order", {"id": "o-2"})])
    reply["choices"][0]["message"] |= {"reasoning_content": "Look it up first.", "reasoning_details": DETAILS}
    return reply


@pytest.mark.parametrize("include", [True, False])
async def test_upstream_reasoning_is_sealed_for_the_client_and_sent_back(
    upstream: Upstream, gateway_factory: Any, include: bool
) -> None:
    client, _ = await gateway_factory()
    upstream.script(reasoning_reply())
    asked = {"include": ["reasoning.encrypted_content"]} if include else {}
    reasoning = {"effort": "low", "summary": "auto"}
    made = (await create(client, input="where is o-2?", tools=[LOOKUP], store=False, reasoning=reasoning,
                         **asked)).json()  # fmt: skip
    assert made["reasoning"] == reasoning, "the request's reasoning settings are echoed"
    thought = made["output"][0]
    assert thought["type"] == "reasoning" and thought["content"][0]["text"] == "Look it up first."
    if not include:
        assert "encrypted_content" not in thought
        return
    assert thought["encrypted_content"].startswith(SEALED) and "opaque" not in thought["encrypted_content"]
    upstream.script(completion("Shipped."))
    call = made["output"][-1]
    passed_back = [
        {"role": "user", "content": "where is o-2?"},
        *made["output"],
        {"type": "function_call_output", "call_id": call["call_id"], "output": "shipped"},
    ]
    await create(client, input=passed_back, tools=[LOOKUP], store=False, **asked)
    assistant = upstream.requests[-1]["messages"][1]
    assert assistant["reasoning_details"] == DETAILS, "the upstream gets its own reasoning back"
    assert assistant["reasoning_content"] == "Look it up first." and assistant["content"] == "Checking."


def test_a_stream_seals_the_last_rounds_reasoning_before_its_calls() -> None:
    body = {"model": "m", "input": "x", "include": ["reasoning.encrypted_content"], "tools": [LOOKUP]}
    stream = ResponsesStream(ResponseCall(parse_responses_request(json.dumps(body).encode(), 10, 10)), "m")
    stats = DiscoveryStats(2, 0, (), (), (), 0, (), False)
    own = Native("openai", {"reasoning_details": DETAILS})
    rendered = [
        RoundStarted(1, ResponseMeta()),
        RoundFinished(1, 0.1, None, 0, extra=Native("openai", {"reasoning_details": [{"data": "an MCP round's"}]})),
        RoundStarted(2, ResponseMeta()),
        ContentDelta("Checking."),
        RoundFinished(2, 0.1, None, 0, extra=own),
        ClientToolCall(0, ToolCall("call_1", "lookup_order", '{"id": "o-2"}')),
        Finished(StopReason("tool_calls"), None, stats, extra=own),
    ]
    sent = events("".join(text for event in rendered for text in stream.render(event)))
    done = [event["item"] for event in sent if event["type"] == "response.output_item.done"]
    assert [item["type"] for item in done] == ["message", "reasoning", "function_call"]
    assert done[1]["encrypted_content"].startswith(SEALED)
    final = sent[-1]["response"]["output"]
    assert [item["type"] for item in final] == ["message", "reasoning", "function_call"]
    again = parse_responses_request(json.dumps({"model": "m", "input": final}).encode(), 10, 10)
    (assistant,) = messages_of(again.items, None)
    assert assistant.extra == own and assistant.tool_calls[0].id == "call_1", "one turn, its reasoning with it"
