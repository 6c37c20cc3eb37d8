"""Meaning search spends a bounded amount on one request's queries: the encoder reads at most
`semantic.query_tokens_per_request` tokens for them, in the worker pool, one batch at a time; a query past the budget,
or one the busy encoder could not take within `semantic.query_wait_seconds`, is ranked by its keywords alone and its
result says so."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.config import SemanticConfig
from app.discovery.encode_budget import EncodeBudget, query_cost
from app.discovery.search import prepare_search
from app.discovery.semantic import SemanticSearch
from tests.unit.discovery.test_discovery import _catalog, _discovery


class RecordingBackend:
    """Records each batch and the thread that encoded it; `delay` makes every batch slow."""

    key = "recording"

    def __init__(self, delay: float = 0.0) -> None:
        self.batches: list[list[str]] = []
        self.threads: list[str] = []
        self.delay = delay

    def embed(self, texts: Sequence[str]) -> Any:
        return self.embed_queries(texts)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        time.sleep(self.delay)
        self.batches.append(list(texts))
        self.threads.append(threading.current_thread().name)
        vectors = np.zeros((len(texts), 4), dtype=np.float32)
        vectors[:, 0] = 1.0
        return vectors


def _setup(backend: RecordingBackend, **settings: Any) -> tuple[SemanticSearch, Any]:
    semantic = SemanticSearch(SemanticConfig(sentence_weight=0, **settings))
    semantic.backend, semantic.state = backend, "ready"
    discovery = _discovery(_catalog())
    return semantic, type(discovery)(**{**vars(discovery), "semantic": semantic})


def _long(number: int) -> str:
    return " ".join(f"word{number}x{index}" for index in range(40))  # 40 words of 10 characters: 102 tokens here


async def test_queries_past_the_request_budget_are_ranked_by_keywords_and_say_so() -> None:
    backend = RecordingBackend()
    _, discovery = _setup(backend)
    cost = query_cost(backend, _long(0), sentence_parts=False)
    budget = EncodeBudget(tokens=cost * 2)
    queries = [_long(number) for number in range(5)]
    note = await prepare_search(discovery, {"queries": queries}, encoding=budget)
    assert backend.batches == [queries[:2]], "only what fits in the budget is encoded"
    assert budget.spent == cost * 2 and budget.over == queries[2:]
    assert note is not None and note.startswith("Ranked by keywords alone, not by meaning: 'word2x0 word2x1")
    assert f"query tokens the gateway encodes for one request ({cost * 2}, semantic.query_tokens_per_request)" in note
    again = await prepare_search(discovery, {"queries": queries[:2]}, encoding=budget)
    assert again is None and len(backend.batches) == 1, "vectors already computed cost nothing"
    fresh = EncodeBudget(tokens=cost * 2)
    assert await prepare_search(discovery, {"query": queries[4]}, encoding=fresh) is None
    assert backend.batches[-1] == [queries[4]], "the next request has its own budget"


async def test_a_hostile_query_list_costs_at_most_the_budget() -> None:
    backend = RecordingBackend()
    _, discovery = _setup(backend)
    budget = EncodeBudget(tokens=1024)
    for call in range(50):  # a model asks hundreds of long queries, five per call
        await prepare_search(discovery, {"queries": [_long(call * 5 + n) for n in range(5)]}, encoding=budget)
    encoded = [text for batch in backend.batches for text in batch]
    assert budget.spent <= 1024 and len(encoded) == 1024 // query_cost(backend, _long(0), False)
    assert len(budget.over) == 250 - len(encoded)


async def test_queries_are_encoded_in_the_worker_pool_one_batch_at_a_time() -> None:
    backend = RecordingBackend(delay=0.05)
    _, discovery = _setup(backend)
    calls = [prepare_search(discovery, {"query": f"query {n}"}, encoding=EncodeBudget(1024)) for n in range(4)]
    await asyncio.gather(*calls)
    assert all(name.startswith("toolsift-work") for name in backend.threads), backend.threads
    assert len(backend.batches) == 4


async def test_a_busy_encoder_leaves_the_search_to_keywords_instead_of_waiting() -> None:
    backend = RecordingBackend(delay=1.0)
    _, discovery = _setup(backend, query_wait_seconds=0.2)
    budget = EncodeBudget(1024)
    note = await prepare_search(discovery, {"query": "convert currency"}, encoding=budget)
    assert note == "Ranked by keywords alone, not by meaning: 'convert currency'. The query encoder was busy."
    assert budget.busy == ["convert currency"]
