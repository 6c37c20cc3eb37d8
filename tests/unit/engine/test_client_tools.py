"""Client tools: forwarded, deferrable, returned to the client as tool calls; continuity across turns."""

from __future__ import annotations

from typing import Any

from tests.support import Upstream, chat_body, completion, engine_request, make_config

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_customer",
        "description": "Look up a customer record in the CRM by email address",
        "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
    },
}
SHIP = {
    "type": "function",
    "function": {
        "name": "ship_order",
        "description": "Ship a pending order to its customer",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    },
    "defer_loading": True,
}


async def test_client_tool_call_goes_back_to_the_client(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("Let me check.", calls=[("lookup_customer", {"email": "a@b.c"})]))
    response = await client.post("/v1/chat/completions", json=chat_body("who is a@b.c", tools=[LOOKUP]))
    assert response.status_code == 200
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me check."
    assert [c["function"]["name"] for c in choice["message"]["tool_calls"]] == ["lookup_customer"]
    assert upstream.tool_names(0)[0] == "lookup_customer", "client tools lead the list, as the client sent them"
    assert upstream.requests[0]["tools"][0] == LOOKUP


async def test_deferred_client_tool_is_searchable_then_returned(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"query": "ship order"})]),
        completion(calls=[("ship_order", {"order_id": "o-9"})]),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("ship o-9", tools=[LOOKUP, SHIP]))
    first = upstream.tool_names(0)
    assert "ship_order" not in first
    manifest = upstream.requests[0]["tools"][-1]["function"]["description"]
    assert "- client (1 tool): ship_order" in manifest
    assert "ship_order (client tool)" in upstream.requests[1]["messages"][-1]["content"]
    sent = next(t for t in upstream.requests[1]["tools"] if t["function"]["name"] == "ship_order")
    assert "defer_loading" not in sent
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "ship_order"
    assert response.json()["tool_discovery"]["tools_discovered"][0] == "ship_order"


async def test_mixed_round_returns_only_client_calls_and_skips_mcp_calls(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("weather__get_alerts", {"region": "EU"}), ("lookup_customer", {"email": "x@y.z"})])
    )
    response = await client.post("/v1/chat/completions", json=chat_body("x", tools=[LOOKUP]))
    body = response.json()
    calls = body["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["lookup_customer"]
    assert body["tool_discovery"]["tools_called"] == []


async def test_history_keeps_called_deferred_tools_loaded(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("Shipped."))
    history = [
        {"role": "user", "content": "ship o-9"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ship_order", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    await client.post("/v1/chat/completions", json=chat_body(*history, tools=[LOOKUP, SHIP]))
    names = upstream.tool_names(0)
    assert names[-2:] == ["search_tools", "ship_order"], "history-called tools come after search_tools, as when found"


async def test_session_keeps_discoveries_between_requests(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("search_tools", {"tool_names": ["slugify"]})]), completion("first"))
    headers = {"X-Session-Id": "conv-42"}
    await client.post("/v1/chat/completions", json=chat_body("one"), headers=headers)
    upstream.script(completion("second"), completion("third"), completion("fourth"))
    await client.post("/v1/chat/completions", json=chat_body("two"), headers=headers)
    assert upstream.tool_names(2)[-1] == "textkit__slugify"
    await client.post("/v1/chat/completions", json=chat_body("three", session_id="conv-42"))
    assert upstream.tool_names(3)[-1] == "textkit__slugify", "the body field works like the header"
    await client.post("/v1/chat/completions", json=chat_body("four"))
    assert "textkit__slugify" not in upstream.tool_names(4), "no session, no memory"


async def test_client_tool_name_colliding_with_mcp_tool_is_400(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    clash = {"type": "function", "function": {"name": "weather__get_forecast", "parameters": {"type": "object"}}}
    response = await client.post("/v1/chat/completions", json=chat_body("x", tools=[clash]))
    assert response.status_code == 400
    error = response.json()["error"]
    assert "collides" in error["message"] and error["param"] == "tools[0].function.name"
    search = {"type": "function", "function": {"name": "search_tools"}}
    response = await client.post("/v1/chat/completions", json=chat_body("x", tools=[search]))
    assert response.status_code == 400
    assert upstream.requests == []


async def test_deferred_client_tools_reuse_the_shared_mcp_index(upstream: Upstream, gateway_factory: Any) -> None:
    from app.discovery.merged import MergedIndex

    _, gateway = await gateway_factory()
    plain = await gateway.request_tools(engine_request(chat_body("x")), None)
    with_client = await gateway.request_tools(engine_request(chat_body("x", tools=[LOOKUP, SHIP])), None)
    assert plain.discovery is not None and with_client.discovery is not None
    assert isinstance(with_client.discovery.index, MergedIndex)
    assert with_client.discovery.index.first is plain.discovery.index, "the MCP index is shared, not rebuilt"
    assert with_client.discovery.manifest.startswith(plain.discovery.manifest)
    assert with_client.discovery.manifest.endswith("- client (1 tool): ship_order\n  Tools of the calling application")


async def test_the_collision_check_names_only_tools_the_caller_can_see(
    upstream: Upstream, gateway_factory: Any
) -> None:
    keys = [{"name": "alice", "key": "gw-alice", "tool_set": "money"}]
    client, _ = await gateway_factory(make_config(auth={"api_keys": keys}))
    alice = {"authorization": "Bearer gw-alice"}

    def tool(name: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}

    upstream.script(completion("fine"))
    outside = await client.post(
        "/v1/chat/completions", json=chat_body("x", tools=[tool("weather__get_forecast")]), headers=alice
    )
    assert outside.status_code == 200, "a tool outside alice's set is not hers to collide with, nor to learn of"
    assert upstream.tool_names(0)[0] == "weather__get_forecast", "her own tool of that name is the one sent"
    inside = await client.post(
        "/v1/chat/completions", json=chat_body("x", tools=[tool("finance__convert_currency")]), headers=alice
    )
    assert inside.status_code == 400 and inside.json()["error"]["code"] == "tool_name_collision"
    assert "'finance__convert_currency'" in inside.json()["error"]["message"]
    assert len(upstream.requests) == 1
