"""The `native` deferral: an Anthropic upstream gets every deferred tool with `defer_loading` and loads found ones
by `tool_reference`; a Responses upstream gets a client-executed `tool_search` answered with `tool_search_output`.
The tools array never changes within a conversation, and the scripted upstreams refuse what the real APIs refuse
(a reference to a tool not deferred, an output without its call)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastmcp import Client

from app.config import parse_config
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.fronts.mcp.server import McpFront
from tests.support import example_targets
from tests.support.anthropic import CLAUDE_PROVIDER, message, streamed_message, tool_use
from tests.support.responses_upstream import RESPONSES_PROVIDER, function_call, response, scripted_responses
from tests.support.responses_upstream import message as output_message
from tests.support.upstream import events, mock_upstreams

CONVERT = {"amount": 10, "from_currency": "USD", "to_currency": "EUR"}
SHIP_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
SHIP_DESCRIPTION = "Ship a pending order to its customer"
SHIP = {  # the client's own tool, deferred, in each front's format
    "chat": {"type": "function", "defer_loading": True,
             "function": {"name": "ship_order", "description": SHIP_DESCRIPTION, "parameters": SHIP_SCHEMA}},
    "responses": {"type": "function", "name": "ship_order", "description": SHIP_DESCRIPTION,
                  "parameters": SHIP_SCHEMA, "defer_loading": True},
    "messages": {"name": "ship_order", "description": SHIP_DESCRIPTION, "input_schema": SHIP_SCHEMA,
                 "defer_loading": True},
}  # fmt: skip
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def native_config() -> Any:
    return parse_config(
        {
            "providers": {"claude": CLAUDE_PROVIDER, "resp": RESPONSES_PROVIDER},
            "models": {
                "sonnet": {"provider": "claude", "model": "claude-x"},
                "gpt": {"provider": "resp", "model": "g"},
            },
            "mcpServers": {name: {"command": "unused", "defer_loading": True} for name in ("finance", "notes")},
            "tool_discovery": {"semantic": {"enabled": False}},
        },
        environ={},
    )


def results_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic body's tool_result blocks, in order."""
    blocks = [block for turn in body["messages"] if isinstance(turn["content"], list) for block in turn["content"]]
    return [block for block in blocks if block.get("type") == "tool_result"]


def references(block: dict[str, Any]) -> list[str]:
    content = block["content"] if isinstance(block["content"], list) else []
    return [part["tool_name"] for part in content if part.get("type") == "tool_reference"]


async def test_anthropic_eight_turns_keep_one_tools_array(anthropic_upstream: Any, gateway_factory: Any) -> None:
    """Eight turns of one session: deferred tools go with `defer_loading`, a search's result names what it found
    by `tool_reference`, and a tool found in an earlier turn is loaded again right after that turn's user message,
    the same in every later request, while the tools array never changes."""
    calls, replies = anthropic_upstream
    client, _ = await gateway_factory(native_config())
    turns: list[tuple[str, list[dict[str, Any]]]] = [
        ("convert 10 USD to EUR", [tool_use("search_tools", {"query": "convert currency"}, "toolu_s1"),
                                   tool_use("finance__convert_currency", CONVERT, "toolu_c1"), "8.77 EUR."]),
        ("and a note of it", [tool_use("search_tools", {"query": "create note"}, "toolu_s2"),
                              tool_use("notes__create_note", {"title": "fx", "body": "10 USD"}, "toolu_n"), "Noted."]),
        ("convert 20 USD", [tool_use("finance__convert_currency", {**CONVERT, "amount": 20}, "toolu_c2"), "17.54."]),
        ("thanks", ["You're welcome."]),
        ("what notes do I have?", [tool_use("search_tools", {"query": "list notes"}, "toolu_s3"), "One note."]),
        ("convert 30 USD", [tool_use("finance__convert_currency", {**CONVERT, "amount": 30}, "toolu_c3"), "26.31."]),
        ("ok", ["Fine."]),
        ("bye", ["Bye."]),
    ]  # fmt: skip
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful assistant. " * 50}]
    answers = []
    for text, steps in turns:
        history.append({"role": "user", "content": text})
        for step in steps:
            if isinstance(step, str):
                replies.append(httpx.Response(200, json=message([{"type": "text", "text": step}], "end_turn")))
            else:
                replies.append(httpx.Response(200, json=message([step], "tool_use")))
        reply = await client.post("/v1/chat/completions", json={"model": "sonnet", "messages": history},
                                  headers={"X-Session-Id": "conv-1"})  # fmt: skip
        assert reply.status_code == 200, reply.text
        answers.append(reply.json()["choices"][0]["message"]["content"])
        history.append({"role": "assistant", "content": answers[-1]})
    assert answers == ["8.77 EUR.", "Noted.", "17.54.", "You're welcome.", "One note.", "26.31.", "Fine.", "Bye."]
    bodies = [call["body"] for call in calls]
    first = bodies[0]["tools"]
    assert [tool["name"] for tool in first if not tool.get("defer_loading")] == ["search_tools"]
    assert {"finance__convert_currency", "notes__create_note"} <= {tool["name"] for tool in first}
    for index, body in enumerate(bodies):
        assert body["tools"] == first, f"upstream request {index} changed the tools array"
    found = results_of(bodies[1])[-1]
    assert "finance__convert_currency" in references(found) and "Found" in found["content"][0]["text"]
    assert '"converted":8.77' in json.dumps(results_of(bodies[2])[-1]).replace(" ", "").replace("\\", "")
    assert "17.54" in json.dumps(results_of(bodies[7])[-1]), "a tool found in an earlier turn runs directly"
    loaded = bodies[6]["messages"]  # turn 3: what turns 1 and 2 found, each after its own user message
    load_turns = [
        index
        for index, turn in enumerate(loaded)
        if turn["role"] == "assistant"
        and any(
            block.get("name") == "search_tools" and block["id"].startswith("toolsift_load_")
            for block in turn["content"]
        )
    ]
    assert len(load_turns) == 2 and loaded[load_turns[0] - 1]["content"][0]["text"] == "convert 10 USD to EUR"
    for later in bodies[7:]:  # the earlier turns render the same in every later request: the prefix holds
        assert later["messages"][: load_turns[1] + 2] == loaded[: load_turns[1] + 2]


def _front_body(front: str, model: str, stream: bool) -> dict[str, Any]:
    if front == "chat":
        return {"model": model, "messages": [{"role": "user", "content": "ship o-9"}], "tools": [SHIP[front]],
                "stream": stream}  # fmt: skip
    if front == "responses":
        return {"model": model, "input": "ship o-9", "tools": [SHIP[front]], "stream": stream, "store": False}
    return {"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": "ship o-9"}],
            "tools": [SHIP[front]], "stream": stream}  # fmt: skip


def _client_call(front: str, reply: httpx.Response, stream: bool) -> tuple[str, dict[str, Any], str]:
    """The call the client got: its tool's name, arguments and call id."""
    if front == "chat":
        if stream:
            deltas = [chunk["choices"][0]["delta"] for chunk in events(reply.text)[:-1] if chunk.get("choices")]
            parts = [call for delta in deltas for call in delta.get("tool_calls") or ()]
            name = "".join(part["function"].get("name") or "" for part in parts)
            arguments = "".join(part["function"].get("arguments") or "" for part in parts)
            return name, json.loads(arguments), next(part["id"] for part in parts if part.get("id"))
        call = reply.json()["choices"][0]["message"]["tool_calls"][0]
        return call["function"]["name"], json.loads(call["function"]["arguments"]), call["id"]
    if front == "responses":
        output = (
            next(e["response"] for e in events(reply.text) if e.get("type") == "response.completed")["output"]
            if stream
            else reply.json()["output"]
        )
        item = next(item for item in output if item["type"] == "function_call")
        return item["name"], json.loads(item["arguments"]), item["call_id"]
    if stream:
        items = events(reply.text)
        starts = [item["content_block"] for item in items if item.get("type") == "content_block_start"]
        start = next(block for block in starts if block["type"] == "tool_use")
        deltas = [item["delta"] for item in items if item.get("type") == "content_block_delta"]
        partial = "".join(delta.get("partial_json", "") for delta in deltas)
        return start["name"], json.loads(partial), start["id"]
    block = next(block for block in reply.json()["content"] if block["type"] == "tool_use")
    return block["name"], block["input"], block["id"]


def _with_result(front: str, body: dict[str, Any], name: str, arguments: dict[str, Any], ident: str) -> None:
    """The client's history after it ran its tool."""
    text = json.dumps(arguments)
    body["stream"] = False
    if front == "chat":
        call = {"id": ident, "type": "function", "function": {"name": name, "arguments": text}}
        body["messages"] += [{"role": "assistant", "content": None, "tool_calls": [call]},
                             {"role": "tool", "tool_call_id": ident, "content": "shipped"}]  # fmt: skip
    elif front == "responses":
        body["input"] = [{"role": "user", "content": "ship o-9"},
                         {"type": "function_call", "call_id": ident, "name": name, "arguments": text},
                         {"type": "function_call_output", "call_id": ident, "output": "shipped"}]  # fmt: skip
    else:
        body["messages"] += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": ident, "name": name, "input": arguments}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ident, "content": "shipped"}]},
        ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("front", list(PATHS))
async def test_a_client_tool_found_natively_reaches_the_client_as_its_own_call(
    front: str, stream: bool, anthropic_upstream: Any, gateway_factory: Any
) -> None:
    calls, replies = anthropic_upstream
    client, _ = await gateway_factory(native_config())
    search, ship = (
        tool_use("search_tools", {"query": "ship order"}, "toolu_s"),
        tool_use("ship_order", {"order_id": "o-9"}, "toolu_ship"),
    )
    if stream:
        replies += [streamed_message([search], "tool_use"), streamed_message([ship], "tool_use")]
    else:
        replies += [httpx.Response(200, json=message([block], "tool_use")) for block in (search, ship)]
    replies.append(httpx.Response(200, json=message([{"type": "text", "text": "Shipped."}], "end_turn")))
    body = _front_body(front, "sonnet", stream)
    reply = await client.post(PATHS[front], json=body)
    assert reply.status_code == 200, reply.text
    name, arguments, ident = _client_call(front, reply, stream)
    assert (name, arguments) == ("ship_order", {"order_id": "o-9"}) and "search_tools" not in reply.text
    _with_result(front, body, name, arguments, ident)
    reply = await client.post(PATHS[front], json=body)
    assert reply.status_code == 200, reply.text and "Shipped." in reply.text
    bodies = [call["body"] for call in calls]
    assert "ship_order" in references(results_of(bodies[1])[-1])
    assert all(sent["tools"] == bodies[0]["tools"] for sent in bodies)
    assert {tool["name"]: tool.get("defer_loading") for tool in bodies[0]["tools"]}["ship_order"] is True
    last = results_of(bodies[2])
    assert references(last[-2]) == ["ship_order"], "loaded again before the client's call of it"
    assert last[-1]["tool_use_id"] == ident and "shipped" in json.dumps(last[-1])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("front", list(PATHS))
async def test_a_responses_upstream_loads_found_tools_by_tool_search_output(
    front: str, stream: bool, gateway_factory: Any
) -> None:
    with mock_upstreams() as router:
        sent, replies = scripted_responses(router)
        client, _ = await gateway_factory(native_config())
        search = {"id": "tsc_1", "type": "tool_search_call", "call_id": "call_s", "execution": "client",
                  "status": "completed", "arguments": {"query": "ship order"}}  # fmt: skip
        replies += [response(search), response({**function_call("ship_order", {"order_id": "o-9"}), "call_id": "c1"})]
        replies.append(response(output_message("Shipped.")))
        body = _front_body(front, "gpt", stream)
        reply = await client.post(PATHS[front], json=body)
        assert reply.status_code == 200, reply.text
        name, arguments, ident = _client_call(front, reply, stream)
        assert (name, arguments) == ("ship_order", {"order_id": "o-9"})
        assert "search_tools" not in reply.text and "tool_search" not in reply.text
        _with_result(front, body, name, arguments, ident)
        reply = await client.post(PATHS[front], json=body)
        assert reply.status_code == 200, reply.text
    assert [tool.get("name") or tool["type"] for tool in sent[0]["tools"]] == ["tool_search"]
    assert sent[0]["tools"][0]["execution"] == "client" and "finance" in sent[0]["tools"][0]["description"]
    assert all(body["tools"] == sent[0]["tools"] for body in sent), "deferred functions are never sent up front"
    output = next(item for item in sent[1]["input"] if item["type"] == "tool_search_output")
    assert output["call_id"] == "call_s" and "ship_order" in [tool["name"] for tool in output["tools"]]
    kinds = [item["type"] for item in sent[2]["input"]]
    assert kinds[-4:] == ["tool_search_call", "tool_search_output", "function_call", "function_call_output"]


async def test_run_task_on_an_anthropic_upstream_loads_found_tools_natively(anthropic_upstream: Any) -> None:
    """The MCP front's `run_task` goes through the same loop: found tools are named by `tool_reference`."""
    calls, replies = anthropic_upstream
    replies += [
        httpx.Response(200, json=message([tool_use("search_tools", {"query": "convert currency"}, "t1")], "tool_use")),
        httpx.Response(200, json=message([tool_use("finance__convert_currency", CONVERT, "t2")], "tool_use")),
        httpx.Response(200, json=message([{"type": "text", "text": "10 USD is 8.77 EUR."}], "end_turn")),
    ]
    raw = native_config().model_dump(mode="json", by_alias=True, exclude_none=True)
    config = parse_config({**raw, "mcp_front": {"mode": "proxy", "run_task": {"model": "sonnet"}}}, environ={})
    gateway = Gateway(config, example_targets("finance", "notes"))
    await gateway.start()
    try:
        async with Client(McpFront(Engine(gateway), "proxy").server) as client:
            result = await client.call_tool("run_task", {"task": "Convert 10 USD to EUR"})
    finally:
        await gateway.stop()
    assert "8.77 EUR" in str(result.content[0])
    bodies = [call["body"] for call in calls]
    assert all(body["tools"] == bodies[0]["tools"] for body in bodies)
    assert "finance__convert_currency" in references(results_of(bodies[1])[-1])
    assert '"converted":8.77' in json.dumps(results_of(bodies[2])[-1]).replace(" ", "").replace("\\", "")
