"""bench/cache.py's pure parts: the bill (the prefix-cacheable share in the providers' render order, OpenAI's and
Anthropic's multipliers) and the scripted upstreams, which must refuse what the real APIs refuse."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import pytest
from starlette.testclient import TestClient

from bench import cache_bill
from bench.cache_bill import Ledger, openai_cached, render
from bench.cache_upstream import Action, Model, Seen, Step, Upstreams, read_chat, read_messages, read_responses

SYSTEM = "You answer questions about stocks. " * 300  # about 2,100 tokens


def tool(name: str, deferred: bool = False) -> dict[str, Any]:
    definition = {"name": name, "description": f"{name} does one thing well.", "input_schema": {"type": "object"}}
    return {**definition, "defer_loading": True} if deferred else definition


def test_openai_caches_from_1024_tokens_in_128_token_steps() -> None:
    assert [openai_cached(n) for n in (0, 1023, 1024, 1151, 1152, 1300, 5000)] == [0, 0, 1024, 1024, 1152, 1280, 4992]


def test_the_shared_prefix_is_counted_in_render_order_tools_then_system_then_messages() -> None:
    first = {"tools": [tool("a")], "system": SYSTEM, "messages": [{"role": "user", "content": "hi"}]}
    longer = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "hello"}]}
    new_tool = {**longer, "tools": [tool("a"), tool("b")]}  # a tool added: everything after the tools moves
    ledger = Ledger()
    bills = [ledger.bill(render("anthropic", body)) for body in (first, longer, new_tool)]

    assert bills[0].cacheable == 0
    assert bills[1].cacheable == bills[0].tokens  # the whole first request is the second's prefix
    assert bills[2].cacheable == cache_bill.count(json.dumps(tool("a"), separators=(",", ":")))
    assert bills[1].openai_cached == openai_cached(bills[0].tokens) > 0
    assert bills[1].effective("openai") == pytest.approx(
        bills[1].tokens - bills[1].openai_cached + 0.1 * bills[1].openai_cached
    )


def test_anthropic_bills_only_at_breakpoints_write_at_125_and_read_at_01() -> None:
    def body(marked: bool, *texts: str) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": t}]} for t in texts]
        if marked:
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        return {"system": SYSTEM, "messages": messages}

    plain = Ledger()
    unmarked = [plain.bill(render("anthropic", body(False, *texts))) for texts in (["one"], ["one", "two"])]
    assert [(bill.anthropic_read, bill.anthropic_write) for bill in unmarked] == [(0, 0), (0, 0)]
    assert unmarked[1].effective("anthropic") == unmarked[1].tokens  # no breakpoint, no cache

    ledger = Ledger()
    first, second = (ledger.bill(render("anthropic", body(True, *texts))) for texts in (["one"], ["one", "two"]))
    assert (first.anthropic_read, first.anthropic_write) == (0, first.tokens)
    assert second.anthropic_read == first.tokens  # the moved breakpoint still reads the earlier prefix
    assert second.anthropic_write == second.tokens - first.tokens
    assert second.effective("anthropic") == pytest.approx(0.1 * first.tokens + 1.25 * (second.tokens - first.tokens))


def test_a_deferred_tool_is_not_rendered_until_a_reference_expands_it_where_it_stands() -> None:
    tools = [tool("search_tools"), tool("stock_price", deferred=True)]
    reference = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "found"}, {"type": "tool_reference", "tool_name": "stock_price"}],
    }
    before = render("anthropic", {"tools": tools, "messages": [{"role": "user", "content": "price?"}]})
    after = render("anthropic", {"tools": tools, "messages": [{"role": "user", "content": [reference]}]})

    assert len(before) == 2  # search_tools and the message: the deferred tool is not in the prompt
    assert cache_bill.count(json.dumps(tools[1], separators=(",", ":"))) in [block.tokens for block in after]


# -- the scripted upstreams ---------------------------------------------------------------------------------------


def anthropic_search_round(reference: str, deferred: bool) -> dict[str, Any]:
    return {
        "tools": [tool("search_tools"), tool("stock_price", deferred=deferred)],
        "messages": [
            {"role": "user", "content": "price?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "search_tools", "input": {"query": "stock price"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "tool_reference", "tool_name": reference}],
                    }
                ],
            },
        ],
    }


@pytest.fixture
def upstream() -> TestClient:
    model = Model()
    model.learn([Step("price?", (Action("stock_price", {"symbol": "NVDA"}, query="stock price"),), "NVDA is 100.")])
    return TestClient(Upstreams(model).app)


def test_anthropic_refuses_a_tool_reference_to_a_tool_not_deferred_in_tools(upstream: TestClient) -> None:
    for reference, deferred in (("stock_price", False), ("unknown_tool", True)):
        response = upstream.post("/v1/messages", json=anthropic_search_round(reference, deferred))
        assert response.status_code == 400
        assert response.json()["error"]["type"] == "invalid_request_error"
        assert reference in response.json()["error"]["message"]

    answer = upstream.post("/v1/messages", json=anthropic_search_round("stock_price", True)).json()
    assert answer["content"] == [
        {"type": "tool_use", "id": answer["content"][0]["id"], "name": "stock_price", "input": {"symbol": "NVDA"}}
    ]


def test_responses_refuses_a_tool_search_output_without_a_matching_call(upstream: TestClient) -> None:
    found = {"type": "function", "name": "stock_price", "parameters": {"type": "object"}}
    search = {"type": "tool_search", "execution": "client", "description": "search", "parameters": {}}
    call = {"type": "tool_search_call", "call_id": "c1", "execution": "client", "arguments": {"query": "stock price"}}
    output = {"type": "tool_search_output", "call_id": "c1", "execution": "client", "tools": [found]}
    user = {"type": "message", "role": "user", "content": "price?"}
    function_call = {"type": "function_call", "call_id": "c1", "name": "x", "arguments": "{}"}
    for items in ([user, output], [user, {**call, "call_id": "c2"}, output], [user, function_call, output]):
        response = upstream.post("/v1/responses", json={"tools": [search], "input": items})
        assert response.status_code == 400
        assert "No tool call found for tool_search_output" in response.json()["error"]["message"]

    answer = upstream.post("/v1/responses", json={"tools": [search], "input": [user, call, output]}).json()
    assert [(item["type"], item.get("name")) for item in answer["output"]] == [("function_call", "stock_price")]
    first = upstream.post("/v1/responses", json={"tools": [search], "input": [user]}).json()
    assert first["output"][0]["type"] == "tool_search_call"
    assert first["output"][0]["arguments"] == {"query": "stock price"}


def test_chat_refuses_a_tool_result_without_a_call_and_duplicate_tool_names(upstream: TestClient) -> None:
    function = {"type": "function", "function": {"name": "search_tools", "parameters": {"type": "object"}}}
    orphan = {
        "messages": [{"role": "user", "content": "price?"}, {"role": "tool", "tool_call_id": "x", "content": "r"}]
    }
    assert upstream.post("/v1/chat/completions", json=orphan).status_code == 400
    twice = {"tools": [function, function], "messages": [{"role": "user", "content": "price?"}]}
    assert upstream.post("/v1/chat/completions", json=twice).status_code == 400


def test_the_model_searches_then_calls_through_call_tool_once_a_search_named_the_tool() -> None:
    model = Model()
    model.learn([Step("price?", (Action("fin__stock_price", {"symbol": "NVDA"}, query="stock price"),), "done")])
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {}}} for name in ("search_tools", "call_tool")
    ]
    asked = {"tools": tools, "messages": [{"role": "user", "content": "price?"}]}
    assert model.decide(read_chat(asked)).name == "search_tools"

    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "search_tools", "arguments": '{"query": "stock price"}'},
    }
    searched = {
        "tools": tools,
        "messages": [
            *asked["messages"],
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "fin__stock_price: ..."},
        ],
    }
    decision = model.decide(read_chat(searched))
    assert (decision.name, decision.arguments) == (
        "call_tool",
        {"name": "fin__stock_price", "arguments": {"symbol": "NVDA"}},
    )

    missed = {
        **searched,
        "messages": [*searched["messages"][:-1], {"role": "tool", "tool_call_id": "c1", "content": "none"}],
    }
    assert model.decide(read_chat(missed)).kind == "answer"
    assert model.misses == ["fin__stock_price"]


def test_reading_what_each_format_makes_callable() -> None:
    assert isinstance(read_messages({"messages": []}), Seen)
    seen = read_responses({"tools": [{"type": "function", "name": "f", "defer_loading": True}], "input": "hi"})
    assert (seen.tools, seen.user, seen.search) == ({"f": True}, "hi", None)


def test_a_mode_is_an_overlay_and_one_the_gateway_refuses_prints_as_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the bench puts bench/ first on it
    cache = importlib.import_module("bench.cache")
    base = {"providers": {"chat": {"type": "openai"}, "anthropic": {"type": "anthropic"}},
            "tool_discovery": {"enabled": True, "semantic": {"enabled": False}}}  # fmt: skip
    config = cache.merged(base, cache.MODES["call_tool"])
    assert config["providers"] == {"chat": {"type": "openai", "deferral": "call_tool"},
                                   "anthropic": {"type": "anthropic", "deferral": "call_tool"}}  # fmt: skip
    assert config["tool_discovery"] == {"enabled": True, "semantic": {"enabled": False}, "defer": "all"}
    assert base["providers"]["chat"] == {"type": "openai"}  # the base is left as it was

    totals = cache.Totals()
    totals.add(cache_bill.Bill(2000, 1500, 1408, 0, 0), "openai")
    refused = [cache.Row(20, shape, "chat", "native", None) for shape in ("chat_app", "agent")]
    rows = [cache.Row(20, "chat_app", "chat", "all", totals, tool_arrays=1), *refused]
    lines = cache.table(rows).splitlines()
    row = ["20", "chat_app", "chat", "all", "1", "2,000", "75.0%", "500", "733", "1.00x", "1", "0"]
    assert lines[2].split() == row
    assert lines[3:] == [f"{20:>7} {'(every one)':<12} {'':<9} {'native':<9} not available"]


def test_an_mcp_result_that_never_reaches_the_model_counts_as_a_miss() -> None:
    model = Model()
    model.learn([Step("price?", (Action("fin__stock_price", {"symbol": "NVDA"}, query="stock price"),), "done")])
    tools = [{"type": "function", "function": {"name": "fin__stock_price", "parameters": {}}}]
    call = {"id": "c1", "type": "function", "function": {"name": "fin__stock_price", "arguments": "{}"}}
    for result in ('stock_price: done for {"symbol": "NVDA"}', "error: the server is down"):
        messages = [{"role": "user", "content": "price?"}, {"role": "assistant", "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": result}]  # fmt: skip
        assert model.decide(read_chat({"tools": tools, "messages": messages})).text == "done"
    assert model.misses == ["fin__stock_price (its result never came back)"]


def test_a_mode_one_provider_type_refuses_still_gets_the_rows_of_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    cache = importlib.import_module("bench.cache")

    def run_mode(config: dict[str, Any], mode: str, catalog: int, runs: list[tuple[str, str]], *_: Any) -> list[Any]:
        """A gateway that accepts `deferral` on the anthropic provider only."""
        accepted = all("deferral" not in spec for name, spec in config["providers"].items() if name != "anthropic")
        return [
            cache.Row(catalog, shape, provider, mode, cache.Totals() if accepted else None) for shape, provider in runs
        ]

    monkeypatch.setattr(cache, "run_mode", run_mode)
    base = {"providers": {name: {"type": kind} for name, kind in cache.PROVIDERS.items()}}
    rows = cache.mode_rows(base, cache.MODES["native"], "native", 100, cache.RUNS, None, {})

    assert [(row.shape, row.provider) for row in rows] == cache.RUNS
    assert [row.provider for row in rows if row.totals is not None] == ["anthropic", "anthropic"]
    assert "    100 chat_app     chat      native    not available" in cache.table(rows).splitlines()
