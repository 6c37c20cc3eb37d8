"""Discovery's shared state under the worker pool's threads: the stemmer and the word cache are used by every thread
that indexes or searches at once, and each must give every thread the answer it would get alone. The interpreter
switches threads every microsecond in the tests that hammer them, so the interleavings that happen now and then in the
pool happen in every run (the 200 searches at once check that every search answers; switching that often only slows
their MCP and event-loop machinery, not the shared state under test)."""

from __future__ import annotations

import random
import string
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import snowballstemmer
from fastmcp import Client, FastMCP

from app.discovery import index
from app.discovery.index import tokenize
from app.engine.api import Engine

THREADS = 4


@pytest.fixture
def switch_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _words(count: int, seed: int) -> list[str]:
    """Distinct made-up words no cache holds yet (stemming is only reached on a cache miss)."""
    chooser = random.Random(seed)
    return [
        "q" + "".join(chooser.choice(string.ascii_lowercase) for _ in range(chooser.randint(6, 16))) + f"ing{n}x"
        for n in range(count)
    ]


def _hammer(work: Callable[[int], Any]) -> list[BaseException]:
    """`work(thread_number)` in THREADS threads started together; what any of them raised."""
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def run(number: int) -> None:
        start.wait()
        try:
            work(number)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(number,)) for number in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


@pytest.mark.usefixtures("switch_often")
def test_threads_stemming_at_once_each_get_their_own_words_stems() -> None:
    reference = snowballstemmer.stemmer("english")
    batches = [_words(4000, seed) for seed in range(THREADS)]
    expected = [[reference.stemWord(word) for word in batch] for batch in batches]
    got: list[list[str]] = [[] for _ in range(THREADS)]

    def work(number: int) -> None:
        got[number] = [token for word in batches[number] for token in tokenize(word)]

    assert _hammer(work) == []
    assert got == expected


@pytest.mark.usefixtures("switch_often")
def test_the_word_cache_stays_within_its_bound_when_threads_fill_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "WORD_CACHE_SIZE", 500)
    monkeypatch.setattr(index, "_words", {})
    batches = [_words(3000, 100 + seed) for seed in range(THREADS)]

    def work(number: int) -> None:
        for word in batches[number]:
            tokenize(word)

    assert _hammer(work) == []
    assert len(index._words) <= 500


async def test_two_hundred_concurrent_searches_all_answer() -> None:
    """The acceptance check: searches run in the worker pool; 200 at once, each with words new to the index."""
    import asyncio

    from app.config import parse_config
    from app.engine.gateway import Gateway
    from app.fronts.mcp.server import McpFront

    backend = FastMCP("shop")

    @backend.tool
    def track_parcel(number: str) -> str:
        """Track a parcel by its tracking number and tell where it is."""
        return number

    @backend.tool
    def refund_order(order: str) -> str:
        """Refund a customer's order and email the receipt."""
        return order

    config = parse_config({"mcpServers": {"shop": {"command": "unused", "defer_loading": True}}}, environ={})
    gateway = Gateway(config, {"shop": backend})
    await gateway.start()
    try:
        front = McpFront(Engine(gateway), "proxy")
        queries = [" ".join(["track", "parcel", *_words(12, 1000 + n)]) for n in range(200)]
        async with Client(front.server) as client:
            results = await asyncio.gather(
                *(client.call_tool_mcp("search_tools", {"query": query}) for query in queries),
                return_exceptions=True,
            )
    finally:
        await gateway.stop()
    assert [result for result in results if isinstance(result, BaseException) or result.is_error] == []
    assert all("shop__track_parcel" in str(result.content) for result in results)
