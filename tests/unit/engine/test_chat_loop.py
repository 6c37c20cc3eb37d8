"""The discovery loop end to end through the HTTP app: respx upstream, in-memory example MCP servers."""

from __future__ import annotations

import json
from typing import Any

from tests.support import Upstream, chat_body, completion, make_config


async def test_first_call_carries_search_tools_and_loaded_tools_but_no_deferred(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("hello"))
    response = await client.post("/v1/chat/completions", json=chat_body("hi"))
    assert response.status_code == 200, response.text
    names = upstream.tool_names(0)
    assert names[:4] == [
        "weather__get_current_weather",
        "weather__get_forecast",
        "weather__get_alerts",
        "weather__get_air_quality",
    ]
    assert names[4:] == ["search_tools"]
    description = upstream.requests[0]["tools"][4]["function"]["description"]
    assert "- notes (9 tools): create_note" in description
    assert "- textkit (11 tools): count_words, slugify, extract_emails" in description and "more" not in description
    assert "weather (" not in description
    body = response.json()
    assert body["choices"][0]["message"]["content"] == "hello"
    assert body["tool_discovery"]["deferred_tools"] == 27
    assert body["tool_discovery"]["rounds"] == 1


async def test_search_by_query_then_mcp_call_then_answer(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"query": "convert currency exchange"})], usage=(100, 10)),
        completion(
            calls=[("finance__convert_currency", {"amount": 100, "from_currency": "USD", "to_currency": "EUR"})],
            usage=(200, 20),
        ),
        completion("100 USD is about 92 EUR.", usage=(300, 30)),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("How much is 100 USD in EUR?"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["choices"][0]["message"]["content"] == "100 USD is about 92 EUR."
    assert body["usage"] == {"prompt_tokens": 600, "completion_tokens": 60, "total_tokens": 660}
    stats = body["tool_discovery"]
    assert stats["rounds"] == 3 and stats["search_calls"] == 1
    assert "finance__convert_currency" in stats["tools_discovered"]
    assert stats["tools_called"] == ["finance__convert_currency"]

    first, second, third = (upstream.tool_names(i) for i in range(3))
    assert second[: len(first)] == first, "earlier tools keep their order"
    assert "finance__convert_currency" in second[len(first) :]
    assert third == second
    found = next(t for t in upstream.requests[1]["tools"] if t["function"]["name"] == "finance__convert_currency")
    assert set(found["function"]["parameters"]["properties"]) >= {"amount", "from_currency", "to_currency"}

    search_result = upstream.requests[1]["messages"][-1]
    assert search_result["role"] == "tool" and search_result["tool_call_id"] == "call_0_search_tools"
    assert "finance__convert_currency (server: finance)" in search_result["content"]
    assert "amount (number, required)" in search_result["content"]
    assert "now loaded" in search_result["content"]
    tool_result = upstream.requests[2]["messages"][-1]
    assert tool_result["tool_call_id"] == "call_0_finance__convert_currency"
    assert "EUR" in tool_result["content"] and not tool_result["content"].startswith("Error")


async def test_search_by_server_and_by_exact_names(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"server_name": "notes"})]),
        completion(calls=[("search_tools", {"tool_names": ["slugify", "textkit__count_words"]})]),
        completion("done"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("organise"))
    assert response.status_code == 200
    assert response.json()["tool_discovery"]["search_calls"] == 2
    second = upstream.tool_names(1)
    assert [n for n in second if n.startswith("notes__")] == [
        "notes__create_note",
        "notes__get_note",
        "notes__update_note",
        "notes__delete_note",
        "notes__list_notes",
        "notes__search_notes",
        "notes__add_tag",
        "notes__remove_tag",
        "notes__list_tags",
    ]
    third = upstream.tool_names(2)
    assert third[: len(second)] == second
    assert third[len(second) :] == ["textkit__slugify", "textkit__count_words"]


async def test_mcp_calls_of_one_round_all_run_and_answer_in_order(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(
            calls=[
                ("weather__get_current_weather", {"city": "Paris"}),
                ("weather__get_alerts", {"region": "Nowhere-Land"}),
            ]
        ),
        completion("ok"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("weather?"))
    assert response.status_code == 200
    results = upstream.requests[1]["messages"][-2:]
    assert [r["tool_call_id"] for r in results] == ["call_0_weather__get_current_weather", "call_1_weather__get_alerts"]
    assert "Paris" in results[0]["content"]
    assert response.json()["tool_discovery"]["tools_called"] == ["weather__get_current_weather", "weather__get_alerts"]


async def test_request_params_pass_through_and_model_is_routed(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("x"))
    body = chat_body("hi", temperature=0.7, max_tokens=33, response_format={"type": "text"}, user="u1", tool_set=None)
    await client.post("/v1/chat/completions", json=body)
    sent = upstream.requests[0]
    assert sent["model"] == "gpt-test-mini"
    assert sent["temperature"] == 0.7, "the request overrides the model's default params"
    assert sent["max_tokens"] == 33 and sent["response_format"] == {"type": "text"} and sent["user"] == "u1"
    assert "tool_set" not in sent and "session_id" not in sent and "stream" not in sent
    assert upstream.headers[0]["authorization"] == "Bearer sk-test-secret"


async def test_unknown_model_goes_to_default_provider_unchanged(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("x"))
    await client.post("/v1/chat/completions", json={**chat_body("hi"), "model": "some-other-model"})
    assert upstream.requests[0]["model"] == "some-other-model"
    assert "temperature" not in upstream.requests[0]


async def test_usage_is_never_invented(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("x", usage=None))
    response = await client.post("/v1/chat/completions", json=chat_body("hi"))
    assert "usage" not in response.json()


async def test_round_limit_ends_with_a_marker(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(max_rounds=3))
    upstream.script(*[completion(calls=[("weather__get_alerts", {"region": "EU"})]) for _ in range(5)])
    response = await client.post("/v1/chat/completions", json=chat_body("loop"))
    assert response.status_code == 200
    body = response.json()
    assert len(upstream.requests) == 3
    assert body["tool_discovery"]["round_limit_reached"] is True
    assert body["choices"][0]["finish_reason"] == "length"
    assert "round limit" in body["choices"][0]["message"]["content"]
    assert "tool_calls" not in body["choices"][0]["message"]


async def test_discovery_disabled_sends_everything_and_no_search_tools(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory(make_config(tool_discovery={"enabled": False}))
    upstream.script(completion("x"))
    tools = [
        {"type": "function", "function": {"name": "mine", "parameters": {"type": "object"}}, "defer_loading": True}
    ]
    await client.post("/v1/chat/completions", json=chat_body("hi", tools=tools))
    names = upstream.tool_names(0)
    assert "search_tools" not in names
    assert len(names) == 1 + 4 + 9 + 7 + 11
    assert all("defer_loading" not in tool for tool in upstream.requests[0]["tools"])


async def test_nothing_deferred_means_no_search_tools(upstream: Upstream, gateway_factory: Any) -> None:
    servers = {"weather": {"command": "unused"}}
    client, _ = await gateway_factory(make_config(mcpServers=servers, tool_sets={}))
    upstream.script(completion("x"))
    await client.post("/v1/chat/completions", json=chat_body("hi"))
    assert "search_tools" not in upstream.tool_names(0)


async def test_defer_all_defers_every_server_but_an_explicit_defer_loading_false(
    upstream: Upstream, gateway_factory: Any
) -> None:
    servers = {"weather": {"command": "unused"}, "notes": {"command": "unused", "defer_loading": False}}
    for call, discovery in enumerate([{"defer_all": True}, {"defer": "all"}]):
        client, _ = await gateway_factory(make_config(mcpServers=servers, tool_sets={}, tool_discovery=discovery))
        upstream.script(completion("x"))
        await client.post("/v1/chat/completions", json=chat_body("hi"))
        names = upstream.tool_names(call)
        assert names[-1] == "search_tools" and not any(name.startswith("weather__") for name in names[:-1])
        assert len(names) == 1 + 9, "notes' own defer_loading: false wins"
        assert "- weather (4 tools)" in upstream.requests[call]["tools"][-1]["function"]["description"]


async def test_tool_sets_restrict_listing_search_and_calls(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"query": "stock quote loan payment exchange"})]),
        completion(calls=[("finance__get_stock_quote", {"symbol": "AAPL"}), ("weather__get_alerts", {"region": "EU"})]),
        completion("done"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("money", tool_set="money"))
    assert response.status_code == 200
    assert upstream.tool_names(0) == ["search_tools"]
    manifest = upstream.requests[0]["tools"][0]["function"]["description"]
    assert "- finance (2 tools): convert_currency, get_exchange_rates" in manifest
    assert "notes" not in manifest
    search_result = upstream.requests[1]["messages"][-1]["content"]
    assert "get_stock_quote" not in search_result and "calculate_loan_payment" not in search_result
    results = upstream.requests[2]["messages"][-2:]
    assert results[0]["content"].startswith("Error: Unknown tool 'finance__get_stock_quote'")
    assert results[1]["content"].startswith("Error: Unknown tool 'weather__get_alerts'")
    assert response.json()["tool_discovery"]["tools_called"] == []


async def test_exclude_tool_set(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("search_tools", {"server_name": "notes"})]), completion("ok"))
    await client.post("/v1/chat/completions", json=chat_body("x", tool_set="notes_only"))
    loaded = upstream.tool_names(1)
    assert "notes__create_note" in loaded and "notes__delete_note" not in loaded
    assert "- notes (8 tools)" in upstream.requests[0]["tools"][0]["function"]["description"]


def _tool_result(upstream: Upstream, call: int, index: int = -1) -> str:
    content = upstream.requests[call]["messages"][index]["content"]
    assert isinstance(content, str)
    return content


async def test_deferred_tool_called_before_loading_is_refused_not_run(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("notes__delete_note", {"note_id": "note-1"})]),
        completion(calls=[("notes__get_note", {"note_id": "note-1"})]),
        completion(calls=[("search_tools", {"tool_names": ["notes__get_note"]})]),
        completion(calls=[("notes__get_note", {"note_id": "note-1"})]),
        completion("ok"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    refusal = _tool_result(upstream, 1)
    assert refusal.startswith("Error: Tool 'notes__delete_note' is not loaded yet")
    assert "search_tools" in refusal
    assert response.json()["tool_discovery"]["tools_called"] == ["notes__get_note"]
    fetched = _tool_result(upstream, 4)
    assert not fetched.startswith("Error"), "note-1 still exists: the refused delete never ran"


async def test_unknown_tool_and_invalid_json_arguments(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(
            calls=[
                ("made_up_tool", {}),
                ("weather__get_forecast", '{"city": "Paris", days: 2'),
                ("weather__get_alerts", "[1, 2]"),
            ]
        ),
        completion("ok"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 200
    unknown, bad_json, not_object = (m["content"] for m in upstream.requests[1]["messages"][-3:])
    assert unknown.startswith("Error: Unknown tool 'made_up_tool'") and "search_tools" in unknown
    assert bad_json.startswith("Error: the arguments for 'weather__get_forecast' are not valid JSON")
    assert not_object.startswith("Error: the arguments for 'weather__get_alerts' must be a JSON object")


async def test_mcp_tool_errors_keep_the_server_message(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("weather__get_current_weather", {"city": "Atlantis"})]), completion("sorry"))
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    result = _tool_result(upstream, 1)
    assert result.startswith("Error: ") and "Atlantis" in result
    assert response.json()["choices"][0]["message"]["content"] == "sorry"


async def test_oversized_tool_results_are_truncated_with_a_note(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(tool_result_max_chars=300))
    upstream.script(
        completion(calls=[("search_tools", {"tool_names": ["format_json"]})]),
        completion(calls=[("textkit__format_json", {"text": json.dumps({"k": "v" * 2000})})]),
        completion("ok"),
    )
    await client.post("/v1/chat/completions", json=chat_body("x"))
    result = _tool_result(upstream, 2)
    assert len(result) <= 300 and "[truncated by toolsift" in result


async def test_prefetch_loads_clear_matches_before_the_first_call(upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(tool_discovery={"prefetch": 2, "prefetch_min_match": 0.3})
    client, _ = await gateway_factory(config)
    upstream.script(completion("ok"), completion("ok"))
    body = chat_body({"role": "user", "content": [{"type": "text", "text": "Convert 100 USD to EUR currency"}]})
    response = await client.post("/v1/chat/completions", json=body)
    names = upstream.tool_names(0)
    assert names.index("search_tools") < names.index("finance__convert_currency"), "prefetched tools come after"
    assert response.json()["tool_discovery"]["tools_prefetched"][0] == "finance__convert_currency"
    strict = make_config(tool_discovery={"prefetch": 2, "prefetch_min_match": 1.0})
    client, _ = await gateway_factory(strict)
    await client.post("/v1/chat/completions", json=body)
    assert upstream.tool_names(1)[-1] == "search_tools", "no match is clear enough: nothing is prefetched"
