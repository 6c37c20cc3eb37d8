"""What one model reply may ask of the gateway is bounded: at most `max_tool_calls_per_round` calls of a reply run
and at most `max_searches_per_request` searches in a request; every call past a cap is answered with a tool error
the model reads, so the conversation stays whole. With a reply of hundreds of calls: the caps at the engine's entry
(`Gateway.run`, a scripted provider), the rest through the HTTP app."""

from __future__ import annotations

from typing import Any

import pytest

from app.core.model import Message
from app.engine import request_tools
from app.engine.answer import aggregate
from app.engine.caller import Caller
from app.engine.record import RequestRecord
from tests.support import Upstream, chat_body, completion, make_config
from tests.support.engine import ScriptedProvider, ask, calls, said, started_engine


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every search the engine runs."""
    ran: list[Any] = []
    original = request_tools.run_search

    def counted(arguments: Any, *args: Any, **kwargs: Any) -> Any:
        ran.append(arguments)
        return original(arguments, *args, **kwargs)

    monkeypatch.setattr(request_tools, "run_search", counted)
    return ran


def _results(upstream: Upstream, call: int) -> list[dict[str, Any]]:
    return [message for message in upstream.requests[call]["messages"] if message["role"] == "tool"]


def _told(provider: ScriptedProvider, round_index: int) -> list[Message]:
    """The tool results the model was sent in round `round_index`."""
    return [message for message in provider.rounds[round_index].messages if message.role == "tool"]


async def test_a_fan_out_reply_runs_only_what_the_caps_allow(searches: list[Any]) -> None:
    config = make_config(max_tool_calls_per_round=50, max_searches_per_request=20)
    async with started_engine(config) as (gateway, provider):
        fan_out = [
            ("search_tools", {"query": f"distinct query number {index} " + "word " * 50}) for index in range(300)
        ]
        provider.script += [calls(*fan_out), said("done")]
        record = RequestRecord()
        assert await aggregate(record.observe(gateway.run(ask("find everything"), Caller()))) is not None
    assert len(searches) == 20 and len(record.searches) == 20
    results = _told(provider, 1)
    assert [r.tool_call_id for r in results] == [f"call_{index}" for index in range(300)]
    assert not any(r.text().startswith("Error:") for r in results[:20])
    assert all("(max_searches_per_request)" in r.text() for r in results[20:50])
    assert all("asked for 300 tool calls" in r.text() for r in results[50:])
    assert all("(max_tool_calls_per_round)" in r.text() for r in results[50:])


async def test_the_search_budget_spans_rounds_and_mcp_calls_past_the_round_cap_do_not_run(
    searches: list[Any],
) -> None:
    config = make_config(max_tool_calls_per_round=3, max_searches_per_request=2)
    async with started_engine(config) as (gateway, provider):
        weather = [("weather__get_current_weather", {"city": "Paris"}) for _ in range(40)]
        provider.script += [
            calls(("search_tools", {"query": "currency"})),
            calls(("search_tools", {"query": "notes"}), ("search_tools", {"query": "slugify"})),
            calls(*weather),
            said("done"),
        ]
        record = RequestRecord()
        answer = await aggregate(record.observe(gateway.run(ask("go"), Caller())))
    assert answer.content == "done"
    assert len(searches) == 2
    assert "(max_searches_per_request)" in _told(provider, 2)[-1].text()
    assert [call.name for call in record.mcp_calls] == ["weather__get_current_weather"] * 3
    refused = _told(provider, 3)[-40:]
    assert not any(r.text().startswith("Error:") for r in refused[:3])
    assert all("(max_tool_calls_per_round)" in r.text() for r in refused[3:])


async def test_the_default_caps_are_stated_in_the_config() -> None:
    config = make_config()
    assert (config.max_tool_calls_per_round, config.max_searches_per_request) == (32, 16)


async def test_each_query_of_a_search_counts_against_the_request_and_extras_are_named(
    upstream: Upstream, gateway_factory: Any, searches: list[Any]
) -> None:
    client, _ = await gateway_factory(make_config(max_searches_per_request=3, max_queries_per_search=2))
    upstream.script(
        completion(calls=[("search_tools", {"queries": ["convert currency", "create note", "slugify"]})]),
        completion(calls=[("search_tools", {"queries": ["count words", "hash text"]})]),
        completion(calls=[("search_tools", {"query": "loan payment"})]),
        completion("done"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("go"))
    assert response.status_code == 200, response.text
    first, second, third = (_results(upstream, call)[-1]["content"] for call in (1, 2, 3))
    assert "for 'convert currency'" in first and "for 'create note'" in first
    assert "Not searched: 'slugify': one search_tools call runs at most 2 queries (max_queries_per_search)" in first
    assert second.startswith("Found") and "- textkit__count_words (server: textkit)" in second  # one query ran
    assert "Not searched: 'hash text': this request already ran 3 searches" in second
    assert third.startswith("Error: search_tools was not run: this request already ran 3 searches")
    discovery = response.json()["tool_discovery"]
    assert discovery["search_calls"] == 2 and len(searches) == 2
    assert {"finance__convert_currency", "notes__create_note", "textkit__count_words"} <= set(
        discovery["tools_discovered"]
    )
    assert (make_config().max_queries_per_search, make_config().max_searches_per_request) == (5, 16)


async def test_long_searches_past_the_encoding_budget_are_ranked_by_keywords_and_the_model_is_told(
    upstream: Upstream, gateway_factory: Any
) -> None:
    from app.discovery.encode_budget import query_cost
    from tests.unit.discovery.test_encode_budget import RecordingBackend, _long

    backend = RecordingBackend()
    budget = 2 * query_cost(backend, _long(0), sentence_parts=False) + 1
    config = make_config(max_tool_calls_per_round=50, max_searches_per_request=20)
    config.tool_discovery.semantic.query_tokens_per_request = budget
    client, gateway = await gateway_factory(config)
    gateway.semantic.backend, gateway.semantic.state = backend, "ready"
    upstream.script(
        completion(calls=[("search_tools", {"query": _long(index)}) for index in range(6)]), completion("ok")
    )
    response = await client.post("/v1/chat/completions", json=chat_body("find everything"))
    assert response.status_code == 200, response.text
    results = [r["content"] for r in _results(upstream, 1)]
    encoded = [text for batch in backend.batches for text in batch if text.startswith("word")]
    assert encoded == [_long(0), _long(1)], "the budget stopped the encoding"
    told = ["Ranked by keywords alone, not by meaning" in text for text in results]
    assert told == [False, False, True, True, True, True]
    assert f"({budget}, semantic.query_tokens_per_request)" in results[-1]


async def test_searches_and_a_large_answer_are_worked_off_the_event_loop(
    upstream: Upstream, gateway_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranking (10,000 tools, or a long query's made-up words to stem) and checking a large upstream answer (a reply
    of hundreds of calls) are sized by input: they run in the worker pool, so the loop serves others meanwhile."""
    import threading

    from app.providers import answer_checks

    threads: dict[str, list[str]] = {"search": [], "check": []}
    run_search, problem = request_tools.run_search, answer_checks.problem

    def searched(*args: Any, **kwargs: Any) -> Any:
        threads["search"].append(threading.current_thread().name)
        return run_search(*args, **kwargs)

    def checked(*args: Any, **kwargs: Any) -> Any:
        threads["check"].append(threading.current_thread().name)
        return problem(*args, **kwargs)

    monkeypatch.setattr(request_tools, "run_search", searched)
    monkeypatch.setattr("app.providers.base.problem", checked)
    client, _ = await gateway_factory(make_config(max_tool_calls_per_round=300, max_searches_per_request=4))
    made_up = " ".join(f"w{index}x" for index in range(300))
    upstream.script(
        completion(calls=[("search_tools", {"query": f"{made_up} {n}"}) for n in range(300)]), completion("ok")
    )
    response = await client.post("/v1/chat/completions", json=chat_body("find everything"))
    assert response.status_code == 200, response.text
    assert len(threads["search"]) == 4 and all(name.startswith("toolsift-work") for name in threads["search"])
    assert threads["check"][0] != threading.main_thread().name, "the 300-call answer was checked off the loop"
    assert threads["check"][-1] == threading.main_thread().name, "a small answer is checked in place"
