"""The keyed store: one behaviour in memory and in Redis (owners apart, expiry, atomic counters; tests/e2e/store
runs the same tests on Redis), and the memory backend's bounds in real bytes, overall and per owner, least recently
used out first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from app.common.errors import GatewayError
from app.common.identity import Identity
from app.engine.responses_store import ResponseStore, StoredResponse
from app.engine.sessions import SessionKey, Sessions
from app.store import Key, MemoryStore, Store, StoreUnavailable, open_store
from app.store.memory import ENTRY_OVERHEAD
from app.store.redis import RedisStore
from tests.support import free_port

ASTRAL = "😀"  # one character, four bytes in UTF-8 (and four in a Python str of its kind)

# What these tests check is the stores' semantics, not their timeouts: a loaded machine may take longer than the
# production default to answer 60 callers at once, and a timeout would open the Redis circuit for every test after.
SEMANTICS_TIMEOUT = 10.0


@dataclass
class Backend:
    store: Store
    wait: Callable[[float], Awaitable[None]]  # let time pass: the fake clock in memory, real time in Redis


def key(id: str, owner: str = "alice", namespace: str = "test") -> Key:
    return Key(namespace, owner, id)


@pytest.fixture(params=["memory"])
async def backend() -> AsyncIterator[Backend]:
    """The memory backend on a fake clock; tests/e2e/store runs the same tests on Redis."""
    now = [0.0]

    async def advance(seconds: float) -> None:
        now[0] += seconds

    yield Backend(MemoryStore(1000, 1 << 20, clock=lambda: now[0]), advance)


async def test_values_come_back_as_stored_and_owners_never_meet(backend: Backend) -> None:
    store = backend.store
    value = f"{ASTRAL} naïve \x00 bytes".encode()
    odd = key(f"id {ASTRAL} \ud800")  # a lone surrogate, as a JSON body may carry
    await store.put(key("a"), value)
    await store.put(odd, b"odd")
    assert await store.get(key("a")) == value and await store.get(odd) == b"odd"
    assert await store.get(key("a", owner="bob")) is None, "another owner's key is another key"
    assert await store.get(key("a", namespace="other")) is None
    assert not await store.delete(key("a", owner="bob")) and await store.get(key("a")) == value
    assert await store.delete(key("a")) and await store.get(key("a")) is None
    assert not await store.delete(key("a"))
    await store.put(key("b:c", owner="a"), b"a's")
    assert await store.get(key("c", owner="a:b")) is None, "no owner and id spell another owner's key"


async def test_entries_expire_their_ttl_after_their_last_write(backend: Backend) -> None:
    store = backend.store
    await store.put(key("short"), b"1", ttl=0.5)
    await store.put(key("kept"), b"2")
    await backend.wait(0.3)
    assert await store.get(key("short")) == b"1"
    await store.put(key("short"), b"3", ttl=0.5)  # a write starts the time to live again
    await backend.wait(0.3)
    assert await store.get(key("short")) == b"3"
    await backend.wait(0.35)
    assert await store.get(key("short")) is None and await store.get(key("kept")) == b"2"


async def test_incr_counts_within_a_window_set_by_the_first_increment(backend: Backend) -> None:
    store = backend.store
    assert await store.incr(key("hits"), 1, ttl=0.5) == 1
    assert await store.incr(key("hits"), 5, ttl=0.5) == 6
    await backend.wait(0.3)
    assert await store.incr(key("hits"), 1, ttl=0.5) == 7, "a later increment does not extend the window"
    assert await store.get(key("hits")) == b"7", "a counter is readable as its decimal bytes"
    await backend.wait(0.35)
    assert await store.get(key("hits")) is None
    assert await store.incr(key("hits"), 2, ttl=0.5) == 2, "a new window"
    assert await store.incr(key("forever")) == 1 and await store.incr(key("forever"), -3) == -2
    await backend.wait(0.6)
    assert await store.get(key("forever")) == b"-2", "no ttl: no expiry"


async def test_incr_is_atomic_across_concurrent_callers(backend: Backend, request: pytest.FixtureRequest) -> None:
    stores = [backend.store]
    if isinstance(backend.store, RedisStore):  # a second replica on the same Redis
        stores.append(open_store(request.getfixturevalue("redis_url"), 1000, 1 << 20, timeout=SEMANTICS_TIMEOUT))
    counts = await asyncio.gather(*(stores[i % len(stores)].incr(key("n"), 1, ttl=60) for i in range(60)))
    assert sorted(counts) == list(range(1, 61))
    for extra in stores[1:]:
        await extra.aclose()


async def test_an_unreachable_redis_is_store_unavailable() -> None:
    """The first operation names the cause; the circuit is then open, and the next fail at once."""
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(StoreUnavailable, match="store unavailable: ConnectionError"):
        await store.get(key("a"))
    for attempt in (store.put(key("a"), b"x"), store.delete(key("a")), store.incr(key("a"))):
        with pytest.raises(StoreUnavailable, match="circuit open"):
            await attempt
    assert (store.circuit.failures, store.circuit.refused) == (1, 3)
    await store.aclose()


async def test_callers_keep_their_own_answer_to_an_unavailable_store() -> None:
    """Sessions act as empty (a saved search round, never a failure); a continuation fails with a 503."""
    down = f"redis://127.0.0.1:{free_port()}/0"
    sessions = Sessions(RedisStore(down), ttl_seconds=60)
    session = SessionKey(Identity("alice"), "s1")
    await sessions.remember(session, ["a_tool"])
    assert list(await sessions.found(session)) == []
    responses = ResponseStore(RedisStore(down), ttl_seconds=60)
    await responses.save(Identity("alice"), StoredResponse({"id": "r1"}, [], []))  # lost, logged, no error
    for attempt in (responses.get(Identity("alice"), "r1"), responses.delete(Identity("alice"), "r1")):
        with pytest.raises(GatewayError) as caught:
            await attempt
        assert caught.value.status == 503
    await sessions.aclose()
    await responses.aclose()


# -- the memory backend's bounds ----------------------------------------------------------------------------


def entry_size(entry_key: Key, value: bytes) -> int:
    return ENTRY_OVERHEAD + len(entry_key.name().encode()) + len(value)


async def test_memory_counts_real_bytes_astral_characters_included() -> None:
    value = (ASTRAL * 100).encode()
    assert len(value) == 400
    size = entry_size(key("a"), value)
    store = MemoryStore(max_entries=100, max_bytes=2 * size + size // 2)
    await store.put(key("a"), value)
    assert store.bytes == size and store.owner_bytes("alice") == size
    await store.put(key("b"), value)
    await store.put(key("c"), value)
    assert store.bytes == 2 * size and await store.get(key("a")) is None, "four bytes a character: two fit, not three"
    await store.put(key("b"), b"small")
    assert store.bytes == size + entry_size(key("b"), b"small"), "an overwrite counts once"
    await store.delete(key("b"))
    await store.delete(key("c"))
    assert store.bytes == 0 and len(store) == 0 and store.owner_bytes("alice") == 0
    await store.put(key("huge"), b"x" * 10_000)
    assert await store.get(key("huge")) is None and store.bytes == 0, "larger than the whole store: not kept"


async def test_memory_evicts_the_least_recently_used_first() -> None:
    store = MemoryStore(max_entries=3, max_bytes=1 << 20)
    for name in "abc":
        await store.put(key(name), b"1")
    assert await store.get(key("a")) == b"1"  # a read makes it the most recent
    assert await store.incr(key("b")) == 2  # so does an increment
    await store.put(key("d"), b"d")
    assert await store.get(key("c")) is None, "the least recently used went"
    assert [await store.get(key(name)) for name in "abd"] == [b"1", b"2", b"d"]


async def test_memory_per_owner_bound_evicts_only_that_owners_entries() -> None:
    value = (ASTRAL * 50).encode()
    size = entry_size(key("a1"), value)
    store = MemoryStore(max_entries=100, max_bytes=1 << 20, max_owner_bytes=2 * size)
    await store.put(key("b1", owner="bob"), b"bob's")
    await store.put(key("a1"), value)
    await store.put(key("a2"), value)
    await store.get(key("a1"))
    await store.put(key("a3"), value)
    assert await store.get(key("a2")) is None, "alice's least recently used went"
    assert await store.get(key("a1")) == value and await store.get(key("a3")) == value
    assert store.owner_bytes("alice") == 2 * size
    assert await store.put(key("a4"), value * 4) is False, "larger than alice's share: not kept"
    assert await store.get(key("a4")) is None
    assert [await store.get(key(name)) for name in ("a1", "a3")] == [value, value], "nothing of hers went for it"
    assert store.owner_bytes("alice") == 2 * size
    assert await store.get(key("b1", owner="bob")) == b"bob's", "bob is never evicted for alice"
    assert store.bytes == store.owner_bytes("bob") + 2 * size


async def test_memory_expired_entries_free_their_bytes_when_read() -> None:
    now = [0.0]
    store = MemoryStore(max_entries=10, max_bytes=1 << 20, clock=lambda: now[0])
    await store.put(key("a"), b"x" * 100, ttl=1)
    now[0] = 1
    assert await store.get(key("a")) is None and store.bytes == 0 and len(store) == 0


async def test_leases_are_bounded_renewed_and_expire_on_their_own(backend: Backend) -> None:
    """Concurrency slots: at most `limit` holders, a holder renews its own, and a holder that never releases (a
    replica that died) frees its slot when the lease runs out."""
    store, slots = backend.store, key("concurrent")
    assert await store.lease(slots, "a", 2, 0.5) and await store.lease(slots, "b", 2, 0.5)
    assert not await store.lease(slots, "c", 2, 0.5), "both slots held"
    assert await store.lease(slots, "a", 2, 0.5), "a holder renews its own slot"
    await store.release(slots, "b")
    assert await store.lease(slots, "c", 2, 0.5)
    assert not await store.lease(key("concurrent", owner="bob"), "x", 0, 0.5) and await store.lease(
        key("concurrent", owner="bob"), "x", 1, 0.5
    ), "another owner's slots are its own"
    await backend.wait(0.7)  # nobody renewed: every lease ran out
    assert await store.lease(slots, "d", 2, 0.5) and await store.lease(slots, "e", 2, 0.5)


async def test_memory_an_owners_own_bound_replaces_the_per_owner_bound() -> None:
    store = MemoryStore(1000, 1 << 20, max_owner_bytes=8192, owner_bytes={"big": 40_000})
    for index in range(8):
        await store.put(key(str(index), owner="big"), b"x" * 4000)
        await store.put(key(str(index), owner="small"), b"x" * 4000)
    assert await store.get(key("0", owner="big")) is not None, "its own 40,000 bytes hold all eight"
    assert await store.get(key("5", owner="small")) is None and await store.get(key("7", owner="small")) is not None
