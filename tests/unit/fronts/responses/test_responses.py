"""The Responses API front with the official `openai` SDK (`responses.create`, `responses.stream`): discovery by
search, MCP tools run server-side, client function tools returned and continued, usage summed, OpenAI's stream
event sequence, stored responses per caller, and errors in OpenAI's shape."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from tests.support import Upstream, completion, make_config
from tests.support.responses import NOTE, REFUSING, sdk, streamed

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "description": "Look up an order by its id.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    "strict": True,
}


def search_then_note(stream: bool = False) -> list[Any]:
    """Three rounds: search, the MCP tool it found, the answer."""
    replies = [
        completion(calls=[("search_tools", {"query": "create a note"})]),
        completion(calls=[("notes__create_note", NOTE)], usage=(20, 6)),
        completion("Saved your note.", usage=(30, 4)),
    ]
    return [streamed(reply) for reply in replies] if stream else replies


async def test_create_discovers_by_search_and_runs_the_mcp_tool(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(*search_then_note())
    response = await sdk(client).responses.create(model="fast", input="note: buy milk", instructions="Be brief.")
    assert response.status == "completed"
    assert response.output_text == "Saved your note."
    assert [item.type for item in response.output] == ["message"]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (60, 15, 75)
    discovery = response.model_extra["tool_discovery"]  # type: ignore[index]
    assert discovery["search_calls"] == 1 and discovery["tools_called"] == ["notes__create_note"]
    first = upstream.requests[0]["messages"]
    assert first[:2] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "note: buy milk"}]
    assert "notes__create_note" not in upstream.tool_names(0), "deferred until searched"
    assert "notes__create_note" in upstream.tool_names(1)
    tool_result = upstream.requests[2]["messages"][-1]
    assert tool_result["role"] == "tool" and "groceries" in tool_result["content"], "the MCP tool ran in the gateway"


async def test_stream_sends_the_responses_event_sequence(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(*search_then_note(stream=True))
    async with sdk(client).responses.stream(model="fast", input="note: buy milk") as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    kinds = [event.type for event in events]
    text_deltas = kinds.count("response.output_text.delta")
    assert text_deltas >= 2, "text streams as it comes"
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * text_deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert final.output_text == "Saved your note."
    assert final.usage is not None and final.usage.total_tokens == 75, "usage summed over the three rounds"
    created, completed = events[0], events[-1]
    assert created.response.id == completed.response.id == final.id  # type: ignore[union-attr]
    assert created.response.status == "in_progress"  # type: ignore[union-attr]
    assert upstream.requests[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("stream", [False, True])
async def test_client_tool_returns_a_function_call_and_continues_with_its_output(
    upstream: Upstream, gateway_factory: Any, stream: bool
) -> None:
    """Continued both ways: the whole input resent with the output, and `previous_response_id` with only it."""
    client, _ = await gateway_factory()
    api = sdk(client)
    call = completion("Checking.", calls=[("lookup_order", {"id": "o-7"})])
    upstream.script(streamed(call) if stream else call)
    if stream:
        async with api.responses.stream(model="fast", input="where is o-7", tools=[LOOKUP]) as events:
            kinds = [event.type async for event in events]
            first = await events.get_final_response()
        assert kinds[-5:] == [
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    else:
        first = await api.responses.create(model="fast", input="where is o-7", tools=[LOOKUP])  # type: ignore[list-item]
    assert [item.type for item in first.output] == ["message", "function_call"]
    function_call = first.output[1]
    assert function_call.type == "function_call"
    assert (function_call.name, function_call.arguments) == ("lookup_order", '{"id": "o-7"}')
    assert upstream.requests[0]["tools"][0]["function"]["name"] == "lookup_order"
    assert upstream.requests[0]["tools"][0]["function"]["strict"] is True
    output = {"type": "function_call_output", "call_id": function_call.call_id, "output": "shipped yesterday"}

    upstream.script(completion("It shipped yesterday."), completion("Still shipped."))
    resent = [{"role": "user", "content": "where is o-7"}, *[item.model_dump() for item in first.output], output]
    again = await api.responses.create(model="fast", input=resent, tools=[LOOKUP])  # type: ignore[arg-type,list-item]
    chained = await api.responses.create(
        model="fast",
        input=[output],
        tools=[LOOKUP],
        previous_response_id=first.id,  # type: ignore[list-item]
    )
    assert again.output_text == "It shipped yesterday." and chained.output_text == "Still shipped."
    for sent in upstream.requests[-2:]:
        messages = sent["messages"]
        assert messages[0] == {"role": "user", "content": "where is o-7"}
        assert messages[1]["role"] == "assistant" and messages[1]["content"] == "Checking."
        assert messages[1]["tool_calls"][0]["id"] == function_call.call_id
        assert messages[2] == {"role": "tool", "content": "shipped yesterday", "tool_call_id": function_call.call_id}


async def test_deferred_function_tool_is_found_by_search(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"query": "look up an order"})]),
        completion(calls=[("lookup_order", {"id": "o-1"})]),
    )
    deferred: Any = {**LOOKUP, "defer_loading": True}
    response = await sdk(client).responses.create(model="fast", input="where is o-1", tools=[deferred])
    assert "lookup_order" not in upstream.tool_names(0) and "lookup_order" in upstream.tool_names(1)
    sent = next(tool for tool in upstream.requests[1]["tools"] if tool["function"]["name"] == "lookup_order")
    assert "defer_loading" not in sent and "defer_loading" not in sent["function"]
    assert [(item.type, getattr(item, "name", None)) for item in response.output] == [("function_call", "lookup_order")]
    assert response.model_extra["tool_discovery"]["tools_discovered"][0] == "lookup_order"  # type: ignore[index]


async def test_reasoning_becomes_a_reasoning_item(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    reply = completion("42.")
    reply["choices"][0]["message"]["reasoning_content"] = "Six times seven."
    base = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "up-model"}
    deltas = [{"reasoning_content": "Six "}, {"reasoning_content": "times seven."}, {"content": "42."}, {}]
    chunks = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    sse = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    upstream.script(reply, httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse.encode()))
    api = sdk(client)
    plain = await api.responses.create(model="fast", input="6*7?", reasoning={"effort": "low"})
    assert [item.type for item in plain.output] == ["reasoning", "message"]
    assert plain.output[0].content[0].text == "Six times seven."  # type: ignore[union-attr,index]
    assert upstream.requests[0]["reasoning_effort"] == "low"
    async with api.responses.stream(model="fast", input="6*7?") as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert "response.reasoning_text.delta" in kinds
    assert kinds.index("response.reasoning_text.done") < kinds.index("response.output_text.delta")
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[0].content[0].text == "Six times seven."  # type: ignore[union-attr,index]


async def test_parameters_go_upstream_under_chat_names(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion('{"city": "Paris"}'))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    await sdk(client).responses.create(
        model="fast",
        input=[
            {"role": "developer", "content": "Answer in JSON."},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "capital of France"},
                    {"type": "input_image", "image_url": "https://example.com/map.png", "detail": "auto"},
                ],
            },
        ],
        max_output_tokens=50,
        temperature=0.3,
        top_p=0.9,
        metadata={"team": "x"},
        text={"format": {"type": "json_schema", "name": "city", "schema": schema, "strict": True}},
        store=False,
    )
    sent = upstream.requests[0]
    assert sent["max_tokens"] == 50 and sent["temperature"] == 0.3 and sent["top_p"] == 0.9
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "city", "schema": schema, "strict": True},
    }
    assert sent["messages"] == [
        {"role": "system", "content": "Answer in JSON."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "capital of France"},
                {"type": "image_url", "image_url": {"url": "https://example.com/map.png", "detail": "auto"}},
            ],
        },
    ]
    for absent in ("metadata", "store", "max_output_tokens", "text", "input", "instructions"):
        assert absent not in sent


async def test_stored_responses_belong_to_their_caller(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": ["key-alice", "key-bob"]}))
    alice, bob = sdk(client, "key-alice"), sdk(client, "key-bob")
    upstream.script(completion("Hello Alice."), completion("unused"))
    made = await alice.responses.create(model="fast", input="hi")
    fetched = await alice.responses.retrieve(made.id)
    assert fetched.id == made.id and fetched.output_text == "Hello Alice."
    with pytest.raises(openai.NotFoundError) as not_found:
        await bob.responses.retrieve(made.id)
    assert not_found.value.body["message"] == f"Response with id '{made.id}' not found."  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        await bob.responses.delete(made.id)
    with pytest.raises(openai.BadRequestError) as refused:
        await bob.responses.create(model="fast", input="go on", previous_response_id=made.id)
    assert refused.value.code == "previous_response_not_found"
    await alice.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        await alice.responses.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        await alice.responses.retrieve("resp_unknown")
    upstream.script(completion("Not kept."))
    unkept = await alice.responses.create(model="fast", input="hi", store=False)
    assert unkept.store is False
    with pytest.raises(openai.NotFoundError):
        await alice.responses.retrieve(unkept.id)


@pytest.mark.parametrize("tool", ["web_search", "file_search", "code_interpreter", "computer_use_preview"])
async def test_hosted_tools_are_refused_clearly(upstream: Upstream, gateway_factory: Any, tool: str) -> None:
    client, _ = await gateway_factory(make_config(providers=REFUSING))
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk(client).responses.create(model="fast", input="x", tools=[{"type": tool}])  # type: ignore[list-item]
    assert f"hosted tool '{tool}' is not supported" in refused.value.message
    assert refused.value.body["param"] == "tools[0].type"  # type: ignore[index]
    assert refused.value.code == "unsupported_tool"
    assert upstream.requests == [], "nothing went upstream"


async def test_tool_search_tool_is_served_by_the_gateway(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(*search_then_note())
    tools: Any = [{"type": "tool_search"}, LOOKUP]
    response = await sdk(client).responses.create(model="fast", input="note: buy milk", tools=tools)
    assert response.output_text == "Saved your note."
    assert upstream.tool_names(0)[0] == "lookup_order" and "search_tools" in upstream.tool_names(0)
    assert all(tool.get("type") == "function" for tool in upstream.requests[0]["tools"])


async def test_bad_requests_are_answered_in_openai_shape(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    response = await client.post("/v1/responses", json={"model": "fast", "input": [{"type": "computer_call_output"}]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "input[0].type"
    response = await client.post("/v1/responses", json={"model": "fast", "input": [{"type": "item_reference"}]})
    assert response.status_code == 400 and response.json()["error"]["param"] == "input[0].id"
    response = await client.post("/v1/responses", json={"model": "fast", "input": [{"role": "user"}]})
    assert response.json()["error"]["param"] == "input[0].content"
    response = await client.post("/v1/responses", json={"model": "fast"})
    assert response.json()["error"]["message"] == "Invalid request: 'input' is required and must not be empty."
    response = await client.post("/v1/responses", json={"model": "fast", "input": []})
    assert response.status_code == 400 and response.json()["error"]["param"] == "input"
    response = await client.post("/v1/responses", json={"model": "fast", "input": "x", "conversation": "conv_1"})
    assert response.status_code == 400 and "'conversation' is not supported" in response.json()["error"]["message"]


async def test_upstream_failure_before_and_after_the_stream_started(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    api = sdk(client)
    upstream.script(httpx.Response(401, json={"error": {"message": "bad key", "type": "invalid_request_error"}}))
    with pytest.raises(openai.APIStatusError) as before:
        async with api.responses.stream(model="fast", input="x") as stream:
            [event async for event in stream]
    assert before.value.status_code in (401, 502) and "error" in before.value.response.json()
    upstream.script(streamed(completion(calls=[("search_tools", {"query": "note"})])), httpx.Response(500))
    async with api.responses.stream(model="fast", input="x") as stream:
        kinds = [event.type async for event in stream]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-2:] == ["error", "response.failed"]


async def test_reasoning_items_passed_back_go_with_their_turn(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("Done."))
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "Hm."}],
    }
    call = {"type": "function_call", "call_id": "call_1", "name": "lookup_order", "arguments": '{"id": "o-1"}'}
    output = {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "input_text", "text": "ok"}]}
    items: Any = [{"role": "user", "content": "o-1?"}, reasoning, call, output]
    await sdk(client).responses.create(model="fast", input=items, tools=[LOOKUP])  # type: ignore[list-item]
    messages = upstream.requests[0]["messages"]
    assert messages[1]["reasoning_content"] == "Hm." and messages[1]["tool_calls"][0]["id"] == "call_1"
    assert messages[2] == {"role": "tool", "content": "ok", "tool_call_id": "call_1"}


async def test_input_items_list_a_stored_responses_input_a_page_at_a_time(
    upstream: Upstream, gateway_factory: Any
) -> None:
    """`responses.input_items.list` with the SDK: the whole conversation a response answered (the input of the
    response it continued too), newest first by default, paged by the SDK's cursors; only its caller sees it."""
    client, _ = await gateway_factory(make_config(auth={"api_keys": ["key-alice", "key-bob"]}))
    alice, bob = sdk(client, "key-alice"), sdk(client, "key-bob")
    upstream.script(completion("Hi."), completion("Paris."))
    first = await alice.responses.create(model="fast", input="hello")
    later = [{"role": "user", "content": "capital of France?"}, {"role": "user", "content": "one word"}]
    second = await alice.responses.create(model="fast", input=later, previous_response_id=first.id)  # type: ignore[arg-type]

    newest = await alice.responses.input_items.list(second.id)
    texts = [item.content[0].text for item in newest.data]  # type: ignore[union-attr]
    assert texts == ["one word", "capital of France?", "Hi.", "hello"]
    oldest = [item async for item in alice.responses.input_items.list(second.id, order="asc", limit=1)]
    assert [item.content[0].text for item in oldest] == texts[::-1]  # type: ignore[union-attr]
    assert len({item.id for item in oldest}) == 4, "each item its own id, the same at every read"
    page = await alice.responses.input_items.list(second.id, order="asc", limit=2, after=oldest[0].id)
    assert [item.id for item in page.data] == [item.id for item in oldest[1:3]] and page.has_more is True
    with pytest.raises(openai.NotFoundError):
        await bob.responses.input_items.list(second.id)
    with pytest.raises(openai.BadRequestError) as refused:
        await alice.responses.input_items.list(second.id, limit=500)
    assert refused.value.param == "limit"  # type: ignore[attr-defined]
