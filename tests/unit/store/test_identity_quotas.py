"""One caller cannot evict another's state: each identity can have its own share of the in-memory stores
(`responses_store.max_bytes_per_identity`, `sessions.max_bytes_per_identity`), and when the whole store is over
its bound the least recently used entry of the largest identity goes first, never a smaller caller's."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from app.common.identity import Identity
from app.store import Key, MemoryStore
from tests.support import Upstream, completion, make_config
from tests.support.responses import sdk


def key(id: str, owner: str) -> Key:
    return Key("test", owner, id)


async def test_over_the_global_bound_the_largest_owner_loses_its_oldest_entry() -> None:
    store = MemoryStore(max_entries=100, max_bytes=3000)
    await store.put(key("b1", "bob"), b"b" * 300)
    for index in range(20):
        await store.put(key(f"a{index}", "alice"), b"a" * 400)
        assert store.bytes <= 3000
    assert await store.get(key("b1", "bob")) is not None, "bob is older than all of alice's but smaller"
    kept = [index for index in range(20) if await store.get(key(f"a{index}", "alice")) is not None]
    assert kept == list(range(20 - len(kept), 20)) and kept, "alice's oldest went, her latest stayed"
    await store.put(key("c1", "carol"), b"c" * 500)  # carol, new and smaller, fills the store: alice pays
    assert await store.get(key("c1", "carol")) is not None and await store.get(key("b1", "bob")) is not None
    assert store.owner_bytes("alice") < 400 * len(kept) + 1000 and store.bytes <= 3000
    counted = MemoryStore(max_entries=3, max_bytes=1 << 20)
    for name, owner in (("b", "bob"), ("a1", "alice"), ("a2", "alice"), ("a3", "alice")):
        await counted.put(key(name, owner), b"x" * 10)
    assert await counted.get(key("b", "bob")) == b"x" * 10 and await counted.get(key("a1", "alice")) is None


async def test_an_expired_entry_goes_before_any_live_one() -> None:
    now = [0.0]
    store = MemoryStore(max_entries=100, max_bytes=2500, clock=lambda: now[0])
    await store.put(key("old", "bob"), b"b" * 200, ttl=5)
    await store.put(key("a1", "alice"), b"a" * 900)
    now[0] = 10
    await store.put(key("a2", "alice"), b"a" * 900)
    assert await store.get(key("a1", "alice")) is not None and len(store) == 2


async def test_one_key_filling_the_response_store_never_evicts_another_keys_responses(
    upstream: Upstream, gateway_factory: Any
) -> None:
    config = make_config(auth={"api_keys": ["heavy", "light"]}, responses_store={"max_bytes": 256 * 1024})
    client, gateway = await gateway_factory(config)
    heavy, light = sdk(client, "heavy"), sdk(client, "light")
    upstream.script(completion("Light's answer."), *[completion(f"answer {n}") for n in range(18)])
    kept = await light.responses.create(model="fast", input="remember me")
    for number in range(18):
        await heavy.responses.create(model="fast", input=f"{number} " + "bulk text " * 4000)
    assert gateway.responses.store.bytes <= 256 * 1024
    assert (await light.responses.retrieve(kept.id)).output_text == "Light's answer."
    upstream.script(completion("Continued."))
    answer = await light.responses.create(model="fast", input="and?", previous_response_id=kept.id)
    assert answer.output_text == "Continued."


async def test_the_per_identity_quotas_bound_each_caller(upstream: Upstream, gateway_factory: Any) -> None:
    quota = 64 * 1024
    config = make_config(
        auth={"api_keys": ["heavy"]},
        responses_store={"max_bytes_per_identity": quota},
        sessions={"max_bytes_per_identity": 8192},
    )
    client, gateway = await gateway_factory(config)
    assert gateway.sessions.store.max_owner_bytes == 8192
    upstream.script(*[completion(f"answer {n}") for n in range(6)])
    made = [await sdk(client, "heavy").responses.create(model="fast", input="text " * 4000) for _ in range(6)]
    owner = Identity.for_key("heavy").id
    assert 0 < gateway.responses.store.owner_bytes(owner) <= quota
    with pytest.raises(openai.NotFoundError):
        await sdk(client, "heavy").responses.retrieve(made[0].id)
    assert (await sdk(client, "heavy").responses.retrieve(made[-1].id)).output_text == "answer 5"
