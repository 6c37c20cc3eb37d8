"""The `call_tool` deferral: the tool list sent upstream never changes within a conversation, found tools run
through `call_tool` exactly as direct calls do, and a client's own tools go back to it under their own names."""

from __future__ import annotations

import json
from typing import Any

from app.config import Config
from tests.support import Upstream, chat_body, completion, make_config
from tests.support.gateway import UPSTREAM
from tests.support.upstream import events, sse_reply

CONVERT = {"amount": 10, "from_currency": "USD", "to_currency": "EUR"}
SHIP = {
    "type": "function",
    "function": {
        "name": "ship_order",
        "description": "Ship a pending order to its customer",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    },
    "defer_loading": True,
}


def call_tool_config(deferral: str = "call_tool") -> Config:
    provider = {"base_url": UPSTREAM, "api_key": "sk-test-secret", "max_retries": 0, "deferral": deferral}
    return make_config(providers={"up": provider})


def via(name: str, arguments: Any) -> tuple[str, dict[str, Any]]:
    return "call_tool", {"name": name, "arguments": arguments}


def tool_results(body: dict[str, Any]) -> list[str]:
    return [message["content"] for message in body["messages"] if message["role"] == "tool"]


async def test_eight_turns_send_one_tools_array_and_every_call_reaches_the_answer(
    upstream: Upstream, gateway_factory: Any
) -> None:
    """A conversation of 8 turns in one session, the client resending its history: discoveries and calls of MCP
    tools and of its own deferred tool never change the `tools` array, and every result reaches the answer."""
    client, _ = await gateway_factory(call_tool_config())
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful assistant. " * 50}]
    turns = [
        (
            "convert 10 USD to EUR",
            [
                completion(calls=[("search_tools", {"query": "convert currency"})]),
                completion(calls=[via("finance__convert_currency", CONVERT)]),
                completion("10 USD is 8.77 EUR."),
            ],
        ),
        (
            "and a note of it",
            [
                completion(calls=[("search_tools", {"query": "create note"})]),
                completion(calls=[via("notes__create_note", {"title": "fx", "body": "10 USD"})]),
                completion("Noted."),
            ],
        ),
        (
            "convert 20 USD",
            [
                completion(calls=[via("finance__convert_currency", {**CONVERT, "amount": 20})]),
                completion("20 USD is 17.54 EUR."),
            ],
        ),
        (
            "alerts in England?",
            [completion(calls=[("weather__get_alerts", {"region": "England"})]), completion("None.")],
        ),
        (
            "ship o-9",
            [
                completion(calls=[("search_tools", {"query": "ship order"})]),
                completion(calls=[via("ship_order", {"order_id": "o-9"})]),
            ],
        ),
        (None, [completion("Shipped o-9.")]),  # the client's tool result
        ("list my notes", [completion(calls=[("search_tools", {"query": "list notes"})]), completion("One note.")]),
        ("thanks", [completion("You're welcome.")]),
    ]
    answers: list[str] = []
    for text, replies in turns:
        if text is not None:
            history.append({"role": "user", "content": text})
        upstream.script(*replies)
        body = chat_body(messages=history, tools=[SHIP])
        response = await client.post("/v1/chat/completions", json=body, headers={"X-Session-Id": "conv-1"})
        assert response.status_code == 200, response.text
        message = response.json()["choices"][0]["message"]
        history.append({key: value for key, value in message.items() if value is not None})
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            assert call["function"]["name"] == "ship_order", "the client sees its own tool, never call_tool"
            assert json.loads(call["function"]["arguments"]) == {"order_id": "o-9"}
            history.append({"role": "tool", "tool_call_id": call["id"], "content": "shipped: o-9"})
        answers.append(message.get("content") or "")
    assert len(upstream.requests) == 16
    first = upstream.requests[0]["tools"]
    names = [tool["function"]["name"] for tool in first]
    assert names[-2:] == ["search_tools", "call_tool"] and all(name.startswith("weather__") for name in names[:-2])
    for index, sent in enumerate(upstream.requests):
        assert sent["tools"] == first, f"upstream request {index} changed the tools array"
    converted = tool_results(upstream.requests[2])[-1]
    assert '"converted":8.77' in converted.replace(" ", "")
    assert "fx" in tool_results(upstream.requests[5])[-1], "the note was created"
    assert "17.54" in tool_results(upstream.requests[7])[-1], "a tool found in an earlier turn runs through call_tool"
    assert answers[0] == "10 USD is 8.77 EUR." and answers[5] == "Shipped o-9."
    shipped = upstream.requests[12]["messages"]
    turns = [message for message in shipped if message.get("tool_calls")]
    assert turns[-2]["tool_calls"][0]["function"]["name"] == "search_tools", "the gateway's search, kept for it"
    call = turns[-1]["tool_calls"][0]
    assert call["function"]["name"] == "call_tool", "upstream sees the call_tool call it made"
    assert json.loads(call["function"]["arguments"]) == {"name": "ship_order", "arguments": {"order_id": "o-9"}}
    assert shipped[-1] == {"role": "tool", "tool_call_id": call["id"], "content": "shipped: o-9"}
    for later in upstream.requests[13:]:  # every later request renders that turn the same way
        assert later["messages"][: len(shipped)] == shipped


async def test_search_answers_with_full_definitions(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(call_tool_config())
    upstream.script(
        completion(calls=[("search_tools", {"tool_names": ["finance__convert_currency"]})]), completion("ok")
    )
    response = await client.post("/v1/chat/completions", json=chat_body("convert"))
    assert response.json()["tool_discovery"]["deferral"] == "call_tool"
    result = tool_results(upstream.requests[1])[-1]
    assert "call_tool" in result
    found = json.loads(result[result.index("[{") :])
    assert found[0]["name"] == "finance__convert_currency"
    assert set(found[0]["parameters"]["properties"]) == {"amount", "from_currency", "to_currency"}
    search = next(tool for tool in upstream.requests[0]["tools"] if tool["function"]["name"] == "search_tools")
    assert "run one with call_tool" in search["function"]["description"]


async def test_invalid_arguments_read_as_a_direct_calls_do(upstream: Upstream, gateway_factory: Any) -> None:
    """The same call with the same wrong arguments, directly and through call_tool: the same error text."""
    bad = {"region": 7, "extra": True}
    client, _ = await gateway_factory(call_tool_config())
    upstream.script(
        completion(calls=[("weather__get_alerts", bad)]),
        completion("direct"),
        completion(calls=[via("weather__get_alerts", bad)]),
        completion("wrapped"),
    )
    await client.post("/v1/chat/completions", json=chat_body("alerts"))
    await client.post("/v1/chat/completions", json=chat_body("alerts"))
    direct, wrapped = tool_results(upstream.requests[1])[-1], tool_results(upstream.requests[3])[-1]
    assert "region" in direct and direct.startswith("Error")
    assert wrapped == direct


async def test_unknown_and_not_found_names_say_search_first(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(call_tool_config())
    upstream.script(
        completion(calls=[via("finance__convert_currency", CONVERT), via("no_such_tool", {}), ("call_tool", "[1]")]),
        completion("I will search."),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("convert"))
    assert response.json()["choices"][0]["message"]["content"] == "I will search."
    not_found, unknown, malformed = tool_results(upstream.requests[1])
    assert "not loaded yet" in not_found and "search_tools" in not_found and "first" in not_found
    assert "Unknown tool 'no_such_tool'" in unknown and "search_tools" in unknown
    assert "must be a JSON object" in malformed
    assert response.json()["tool_discovery"]["tools_called"] == []


async def test_the_tools_deferral_adds_found_tools(upstream: Upstream, gateway_factory: Any) -> None:
    """`tools`: found tools join the list as before, and no call_tool is offered."""
    client, _ = await gateway_factory(call_tool_config("tools"))
    upstream.script(completion(calls=[("search_tools", {"query": "convert currency"})]), completion("ok"))
    response = await client.post("/v1/chat/completions", json=chat_body("convert"))
    assert "deferral" not in response.json()["tool_discovery"]
    assert "call_tool" not in upstream.tool_names(0)
    assert "finance__convert_currency" in upstream.tool_names(1)


async def test_a_client_tool_named_call_tool_collides(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(call_tool_config())
    own = {"type": "function", "function": {"name": "call_tool", "parameters": {"type": "object"}}}
    response = await client.post("/v1/chat/completions", json=chat_body("hi", tools=[own]))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "tool_name_collision"


def _ship_replies(stream: bool) -> list[Any]:
    search = [("search_tools", {"query": "ship order"})]
    ship = [via("ship_order", {"order_id": "o-9"})]
    if stream:
        return [sse_reply(calls=search), sse_reply(["Shipping."], calls=ship)]
    return [completion(calls=search), completion("Shipping.", calls=ship)]


async def test_client_tool_through_call_tool_on_chat(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(call_tool_config())
    for stream in (False, True):
        upstream.requests.clear()
        upstream.script(*_ship_replies(stream), completion("Shipped."))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "ship o-9"}]
        body = chat_body(messages=messages, tools=[SHIP], stream=stream)
        response = await client.post("/v1/chat/completions", json=body)
        if stream:
            deltas = [chunk["choices"][0]["delta"] for chunk in events(response.text)[:-1] if chunk.get("choices")]
            calls = [call for delta in deltas for call in delta.get("tool_calls") or ()]
            name = "".join(call["function"].get("name") or "" for call in calls)
            arguments = "".join(call["function"].get("arguments") or "" for call in calls)
            call_id = next(call["id"] for call in calls if call.get("id"))
        else:
            call = response.json()["choices"][0]["message"]["tool_calls"][0]
            name, arguments, call_id = call["function"]["name"], call["function"]["arguments"], call["id"]
        assert name == "ship_order" and json.loads(arguments) == {"order_id": "o-9"}
        messages += [
            {
                "role": "assistant",
                "content": "Shipping.",
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "shipped"},
        ]
        response = await client.post("/v1/chat/completions", json=chat_body(messages=messages, tools=[SHIP]))
        assert response.json()["choices"][0]["message"]["content"] == "Shipped."
        sent = upstream.requests[-1]
        assert sent["tools"] == upstream.requests[0]["tools"]
        assert sent["messages"][1]["tool_calls"][0]["function"]["name"] == "search_tools", "its search, kept"
        assert sent["messages"][-2]["tool_calls"][0]["function"]["name"] == "call_tool"
        assert sent["messages"][-2]["tool_calls"][0]["id"] == call_id
        assert sent["messages"][-1] == {"role": "tool", "tool_call_id": call_id, "content": "shipped"}


RESPONSES_SHIP = {**SHIP["function"], "type": "function", "defer_loading": True}


async def test_client_tool_through_call_tool_on_responses(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(call_tool_config())
    for stream in (False, True):
        upstream.requests.clear()
        upstream.script(*_ship_replies(stream), completion("Shipped."))
        body = {"model": "fast", "input": "ship o-9", "tools": [RESPONSES_SHIP], "stream": stream, "store": False}
        response = await client.post("/v1/responses", json=body)
        assert response.status_code == 200, response.text
        if stream:
            done = [event["response"] for event in events(response.text) if event.get("type") == "response.completed"]
            output = done[0]["output"]
        else:
            output = response.json()["output"]
        call = next(item for item in output if item["type"] == "function_call")
        assert call["name"] == "ship_order" and json.loads(call["arguments"]) == {"order_id": "o-9"}
        assert all(item.get("name") != "call_tool" for item in output)
        history = [
            {"role": "user", "content": "ship o-9"},
            {"type": "function_call", "call_id": call["call_id"], "name": "ship_order", "arguments": call["arguments"]},
            {"type": "function_call_output", "call_id": call["call_id"], "output": "shipped"},
        ]
        body = {"model": "fast", "input": history, "tools": [RESPONSES_SHIP], "store": False}
        response = await client.post("/v1/responses", json=body)
        assert response.json()["output"][-1]["content"][0]["text"] == "Shipped."
        sent = upstream.requests[-1]
        assert sent["tools"] == upstream.requests[0]["tools"]
        assert sent["messages"][1]["tool_calls"][0]["function"]["name"] == "search_tools", "its search, kept"
        assert sent["messages"][-2]["tool_calls"][0]["function"]["name"] == "call_tool"
        assert sent["messages"][-1] == {"role": "tool", "tool_call_id": call["call_id"], "content": "shipped"}


MESSAGES_SHIP = {**SHIP["function"], "input_schema": SHIP["function"]["parameters"], "defer_loading": True}
del MESSAGES_SHIP["parameters"]


async def test_client_tool_through_call_tool_on_messages(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(call_tool_config())
    for stream in (False, True):
        upstream.requests.clear()
        upstream.script(*_ship_replies(stream), completion("Shipped."))
        history: list[dict[str, Any]] = [{"role": "user", "content": "ship o-9"}]
        body = {"model": "fast", "max_tokens": 256, "messages": history, "tools": [MESSAGES_SHIP], "stream": stream}
        response = await client.post("/v1/messages", json=body)
        assert response.status_code == 200, response.text
        if stream:
            items = events(response.text)
            start = next(
                item["content_block"]
                for item in items
                if item.get("type") == "content_block_start" and item["content_block"]["type"] == "tool_use"
            )
            partial = "".join(
                item["delta"].get("partial_json", "") for item in items if item.get("type") == "content_block_delta"
            )
            block = {**start, "input": json.loads(partial)}
            assert "call_tool" not in response.text
        else:
            block = next(block for block in response.json()["content"] if block["type"] == "tool_use")
        assert block["name"] == "ship_order" and block["input"] == {"order_id": "o-9"}
        history += [
            {"role": "assistant", "content": [{"type": "text", "text": "Shipping."}, block]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block["id"], "content": "shipped"}]},
        ]
        body = {"model": "fast", "max_tokens": 256, "messages": history, "tools": [MESSAGES_SHIP]}
        response = await client.post("/v1/messages", json=body)
        assert response.json()["content"][0]["text"] == "Shipped."
        sent = upstream.requests[-1]
        assert sent["tools"] == upstream.requests[0]["tools"]
        assert sent["messages"][1]["tool_calls"][0]["function"]["name"] == "search_tools", "its search, kept"
        assert sent["messages"][-2]["tool_calls"][0]["function"]["name"] == "call_tool"
        assert sent["messages"][-2]["tool_calls"][0]["id"] == block["id"]
        assert sent["messages"][-1]["tool_call_id"] == block["id"]


async def test_call_tool_is_a_chat_upstreams_default(upstream: Upstream, gateway_factory: Any) -> None:
    provider = {"base_url": UPSTREAM, "api_key": "sk-test-secret", "max_retries": 0}
    client, _ = await gateway_factory(make_config(providers={"up": provider}))
    upstream.script(completion(calls=[("search_tools", {"query": "convert currency"})]), completion("ok"))
    response = await client.post("/v1/chat/completions", json=chat_body("convert"))
    assert response.json()["tool_discovery"]["deferral"] == "call_tool"
    assert upstream.tool_names(1) == upstream.tool_names(0) and upstream.tool_names(0)[-1] == "call_tool"
