"""The response store: bounded in memory (count, bytes, age), per caller."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from app.common.identity import Identity
from app.engine.responses_store import ResponseStore, StoredResponse
from app.store import MemoryStore
from tests.support import Upstream, completion, make_config
from tests.support.responses import sdk

ALICE, BOB = Identity("alice"), Identity("bob")


def stored(response_id: str, text: str = "x") -> StoredResponse:
    return StoredResponse({"id": response_id, "output": text}, [{"role": "user", "content": text}], ["a_tool"])


async def test_memory_store_keeps_the_latest_within_its_bounds() -> None:
    now = [0.0]
    memory = MemoryStore(max_entries=2, max_bytes=10_000, clock=lambda: now[0])
    store = ResponseStore(memory, ttl_seconds=60)
    for name in ("r1", "r2", "r3"):
        await store.save(ALICE, stored(name))
    assert len(memory) == 2 and await store.get(ALICE, "r1") is None, "the oldest went first"
    kept = await store.get(ALICE, "r3")
    assert kept is not None and kept.tools == ["a_tool"] and kept.items == [{"role": "user", "content": "x"}]
    assert await store.get(BOB, "r3") is None, "another caller's response does not exist for them"
    assert not await store.delete(BOB, "r3") and await store.get(ALICE, "r3") is not None
    now[0] = 61
    assert await store.get(ALICE, "r3") is None, "expired"
    await store.save(ALICE, stored("big", "y" * 20_000))
    assert await store.get(ALICE, "big") is None and memory.bytes <= 10_000, "larger than the whole store: not kept"


async def test_config_bounds_the_gateway_store(upstream: Upstream, gateway_factory: Any) -> None:
    client, gateway = await gateway_factory(make_config(responses_store={"max_responses": 1, "ttl_seconds": 30}))
    upstream.script(completion("one"), completion("two"))
    api = sdk(client)
    first = await api.responses.create(model="fast", input="1")
    second = await api.responses.create(model="fast", input="2")
    assert (await api.responses.retrieve(second.id)).output_text == "two"
    with pytest.raises(openai.NotFoundError):
        await api.responses.retrieve(first.id)
    assert gateway.responses.ttl == 30


async def test_a_large_conversation_continues(upstream: Upstream, gateway_factory: Any) -> None:
    """Over 256 KiB the conversation is encoded, decoded and validated in a worker thread; it comes back whole."""
    client, _ = await gateway_factory()
    upstream.script(completion("Read it."), completion("Still here."))
    api = sdk(client)
    long_text = "lorem ipsum " * 40_000
    made = await api.responses.create(model="fast", input=long_text)
    answer = await api.responses.create(model="fast", input="and?", previous_response_id=made.id)
    assert answer.output_text == "Still here."
    assert upstream.requests[1]["messages"][:2] == [
        {"role": "user", "content": long_text},
        {"role": "assistant", "content": "Read it."},
    ]
