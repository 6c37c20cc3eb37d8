"""Several queries in one `search_tools` call: each keeps its own results, tools are listed once and marked by
the queries that found them, and the queries a call runs are bounded, per call and by the request's searches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.config import SemanticConfig
from app.discovery.queries import QueryBudget
from app.discovery.search import prepare_search, run_search
from app.discovery.semantic import SemanticSearch
from tests.unit.discovery.test_discovery import _catalog, _discovery, _search


def _several(queries: list[str], budget: QueryBudget, loaded: set[str] | None = None, limit: int = 2) -> Any:
    discovery = _discovery(_catalog())
    return run_search({"queries": queries}, discovery, lambda n: n in (loaded or set()), limit, budget=budget)


def test_each_query_keeps_its_own_top_results_marked_by_the_query() -> None:
    outcome = _several(["convert currency", "create note"], QueryBudget())
    names = [entry.name for entry in outcome.found]
    assert names[0] == "finance__convert_currency" and "notes__create_note" in names
    assert len(names) == 4, "two results for each query, each its own top 2"
    assert outcome.text.startswith("Found 4 tools for 2 queries:")
    assert "- finance__convert_currency (server: finance; for 'convert currency')" in outcome.text
    assert "- notes__create_note (server: notes; for 'create note')" in outcome.text
    assert outcome.queries == ("convert currency", "create note") and outcome.searches == 2


def test_a_tool_found_by_several_queries_is_listed_once_with_each_query() -> None:
    outcome = _several(["exchange rates", "currency rates"], QueryBudget())
    assert outcome.text.count("- finance__get_exchange_rates ") == 1
    assert "finance__get_exchange_rates (server: finance; for 'exchange rates', 'currency rates')" in outcome.text
    assert len({entry.name for entry in outcome.found}) == len(outcome.found)


def test_query_and_queries_together_and_repeats_are_one_query() -> None:
    discovery = _discovery(_catalog())
    arguments = {"query": "convert currency", "queries": ["Convert Currency ", "", "create note"]}
    outcome = run_search(arguments, discovery, lambda n: False, 1)
    assert outcome.queries == ("convert currency", "create note")
    assert [entry.name for entry in outcome.found] == ["finance__convert_currency", "notes__create_note"]


def test_one_query_in_queries_reads_as_a_plain_query() -> None:
    assert _search({"queries": ["convert currency"]}) == _search({"query": "convert currency"})


def test_queries_past_the_call_bound_are_named_not_run() -> None:
    queries = ["convert currency", "create note", "loan payment", "delete note"]
    outcome = _several(queries, QueryBudget(per_call=2))
    assert outcome.queries == ("convert currency", "create note")
    assert not any("loan" in entry.name for entry in outcome.found)
    assert (
        "Not searched: 'loan payment', 'delete note': one search_tools call runs at most 2 queries "
        "(max_queries_per_search). Search for them in another call."
    ) in outcome.text


def test_queries_past_the_request_bound_are_answered_as_extra_searches() -> None:
    outcome = _several(["convert currency", "create note", "loan payment"], QueryBudget(5, left=1, per_request=16))
    assert outcome.queries == ("convert currency",) and outcome.searches == 1
    assert (
        "Not searched: 'create note', 'loan payment': this request already ran 16 searches, the most this gateway "
        "allows (max_searches_per_request). Use the tools already found."
    ) in outcome.text


def test_a_hostile_list_of_queries_costs_what_a_few_do() -> None:
    outcome = _several([f"query number {index}" for index in range(200_000)], QueryBudget(per_call=3))
    assert outcome.queries == ("query number 0", "query number 1", "query number 2")
    assert "and 199,992 more: one search_tools call runs at most 3 queries" in outcome.text


def test_names_inside_queries_weak_and_empty_queries_say_so() -> None:
    outcome = _several(["select:create_note,nope", "xylophone", "exchange rates"], QueryBudget(), {"notes__x"})
    names = [entry.name for entry in outcome.found]
    assert names[0] == "notes__create_note" and "finance__get_exchange_rates" in names
    assert "(server: notes; for 'select:create_note,nope')" in outcome.text
    assert "No tool named 'nope'." in outcome.text
    assert "Nothing found for 'xylophone'. Try other keywords" in outcome.text


def test_tools_loaded_already_do_not_take_slots_and_are_named() -> None:
    outcome = _several(["convert currency", "create note"], QueryBudget(), {"finance__convert_currency"}, limit=1)
    assert "finance__convert_currency" not in [entry.name for entry in outcome.found]
    assert outcome.text.endswith("Already loaded (call directly): finance__convert_currency.")


def test_bad_queries_are_an_actionable_error() -> None:
    text, found = _search({"queries": "convert currency"})
    assert text == "Error: 'queries' must be an array of strings." and found == []
    text, _ = _search({"queries": ["", "  "]})
    assert text.startswith("Error: search_tools needs at least one of 'query' (keywords), 'queries'")


class CountingBackend:
    """A query encoder that counts its passes: each text's vector is fixed by its length."""

    key = "counting"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        return self.embed_queries(texts)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        self.batches.append(list(texts))
        vectors = np.zeros((len(texts), 4), dtype=np.float32)
        vectors[:, 0] = 1.0
        return vectors


async def test_a_call_of_several_queries_is_encoded_in_one_batch() -> None:
    semantic = SemanticSearch(SemanticConfig())
    backend = CountingBackend()
    semantic.backend, semantic.state = backend, "ready"
    discovery = _discovery(_catalog())
    discovery = type(discovery)(**{**vars(discovery), "semantic": semantic})
    queries = ["convert currency", "create note", "+loan payment", "select:create_note", "delete note"]
    await prepare_search(discovery, {"queries": queries}, QueryBudget(per_call=4))
    assert backend.batches == [["convert currency", "create note", "loan payment"]]
    await prepare_search(discovery, {"queries": queries[:2]})
    assert len(backend.batches) == 1, "vectors already computed are reused"
    assert semantic.query_vector("loan payment") is not None
