"""The Responses store's bound holds what it says in real memory, with astral characters (four UTF-8 bytes each,
four in a Python string too) as much as with ASCII: what it keeps is bytes, and the Python objects it holds
(each value and key, headers included) add up to no more than `responses_store.max_bytes`."""

from __future__ import annotations

import sys
from typing import Any

from app.store import MemoryStore
from tests.support import Upstream, completion, make_config
from tests.support.responses import sdk

BOUND = 1024 * 1024  # the default 256 MiB, scaled down
EMOJI = "\U0001f600\U0001f680\U0001f9e0\U0001f30d"


async def test_a_bound_holds_with_emoji_text_through_the_server(upstream: Upstream, gateway_factory: Any) -> None:
    client, gateway = await gateway_factory(make_config(responses_store={"max_bytes": BOUND}))
    api = sdk(client)
    upstream.script(*[completion(EMOJI * 2000) for _ in range(24)])
    made = [await api.responses.create(model="fast", input=f"{n} {EMOJI * 8000}") for n in range(24)]
    store = gateway.responses.store
    assert isinstance(store, MemoryStore)
    held = store._entries  # what the store really holds, as Python objects
    assert all(type(entry.value) is bytes for entry in held.values())
    real = sum(sys.getsizeof(name) + sys.getsizeof(entry.value) for name, entry in held.items())
    assert real <= store.bytes <= BOUND, "what it counts is at least what it holds, and within the bound"
    assert store.bytes > BOUND // 2 and 2 < len(held) < 24, "it fills to the bound, the oldest out"
    latest = await api.responses.retrieve(made[-1].id)
    assert latest.output_text == EMOJI * 2000
