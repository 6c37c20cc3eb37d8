"""Per-owner byte bounds in Redis, on a real redis-server: an owner over its bound loses its own least recently used
entries, never another owner's, and every replica on the Redis shares the count, so one caller's flood can neither
grow without bound nor make Redis' `maxmemory` evict another caller's state."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator

import pytest
from redis import Redis

from app.store import Key, Store, open_store
from app.store.memory import ENTRY_OVERHEAD
from app.store.redis import index_names

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")

VALUE = b"v" * 1000


def key(id: str, owner: str = "alice", namespace: str = "test") -> Key:
    return Key(namespace, owner, id)


def size(entry: Key, value: bytes = VALUE) -> int:
    """What an entry counts for, the same in Redis as in memory."""
    return ENTRY_OVERHEAD + len(entry.name().encode()) + len(value)


SHARE = 4 * size(key("a00"))  # four of alice's entries named a00..a99


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Redis]:
    """A flushed database of the module's redis-server, with no maxmemory after the test."""
    with Redis.from_url(redis_url) as client:
        client.flushdb()
        yield client
        client.config_set("maxmemory", 0)


@pytest.fixture
async def store(redis_url: str, redis_client: Redis) -> AsyncIterator[Store]:
    store = open_store(
        redis_url, 1000, 1 << 20, max_owner_bytes=SHARE, owner_bytes={"big": 10 * size(key("a00", "big"))}
    )
    yield store
    await store.aclose()


async def kept(store: Store, owner: str, ids: list[str]) -> list[str]:
    return [id for id in ids if await store.get(key(id, owner)) is not None]


async def test_an_owners_flood_keeps_its_latest_entries_and_never_removes_anothers(store: Store) -> None:
    await store.put(key("b1", "bob"), b"bob's first")
    await store.put(key("b2", "bob"), b"bob's second")
    written = [f"a{index:02}" for index in range(60)]
    for id in written:
        await store.put(key(id), VALUE, ttl=60)
    assert await kept(store, "alice", written) == written[-4:], "her four latest fit her share; the rest went"
    assert await store.get(key("b1", "bob")) == b"bob's first" and await store.get(key("b2", "bob")) == b"bob's second"
    await store.put(key("a59"), b"smaller")  # an overwrite counts once, at its new size
    await store.put(key("a60"), VALUE)
    assert await kept(store, "alice", [*written, "a60"]) == ["a57", "a58", "a59", "a60"]


async def test_an_owners_own_bound_replaces_the_per_owner_bound(store: Store) -> None:
    ids = [f"a{index:02}" for index in range(12)]
    for id in ids:
        await store.put(key(id, "big"), VALUE)
        await store.put(key(id, "small"), VALUE)
    assert await kept(store, "big", ids) == ids[-10:], "its own bound holds ten"
    assert await kept(store, "small", ids) == ids[-4:]


async def test_a_read_makes_an_entry_the_most_recently_used(store: Store) -> None:
    for id in ("a00", "a01", "a02", "a03"):
        await store.put(key(id), VALUE)
    assert await store.get(key("a00")) == VALUE
    await store.put(key("a04"), VALUE)
    assert await kept(store, "alice", ["a00", "a01", "a02", "a03", "a04"]) == ["a00", "a02", "a03", "a04"]


async def test_two_replicas_share_one_owners_count(redis_url: str, store: Store) -> None:
    other = open_store(redis_url, 1000, 1 << 20, max_owner_bytes=SHARE)
    ids = [f"a{index:02}" for index in range(20)]
    for index, id in enumerate(ids):
        await (store, other)[index % 2].put(key(id), VALUE)
    assert await kept(other, "alice", ids) == ids[-4:], "writes through both count against one bound"
    await other.aclose()


async def test_a_value_larger_than_the_share_is_not_kept_and_evicts_nothing(store: Store) -> None:
    await store.put(key("a00"), VALUE)
    await store.put(key("a01"), b"old value")
    await store.put(key("a01"), VALUE * 5)
    assert await store.get(key("a01")) is None, "not kept, and the put replaced the old value"
    assert await store.get(key("a00")) == VALUE


async def test_deletes_free_their_bytes_and_expired_entries_free_theirs_when_evicted(
    store: Store, redis_client: Redis
) -> None:
    for id in ("a00", "a01", "a02", "a03"):
        await store.put(key(id), VALUE, ttl=60)
    assert await store.delete(key("a01")) and not await store.delete(key("a01"))
    await store.put(key("a04"), VALUE)
    assert await kept(store, "alice", ["a00", "a02", "a03", "a04"]) == ["a00", "a02", "a03", "a04"]
    redis_client.delete(key("a00").name(), key("a02").name())  # as expiry or maxmemory would
    await store.put(key("a05"), VALUE)
    await store.put(key("a06"), VALUE)
    assert await kept(store, "alice", ["a03", "a04", "a05", "a06"]) == ["a03", "a04", "a05", "a06"]


async def test_the_count_expires_after_what_it_counts_and_goes_with_its_last_entry(
    store: Store, redis_client: Redis
) -> None:
    names = index_names("test", "alice")
    assert all(not name.decode().startswith("toolsift:") for name in names), "no key name spells an index"
    await store.put(key("a00"), VALUE, ttl=30)
    assert all(25_000 < redis_client.pttl(name) <= 30_000 for name in names)
    await store.put(key("a01"), VALUE, ttl=10)
    assert all(25_000 < redis_client.pttl(name) <= 30_000 for name in names), "the longest time to live"
    await store.put(key("a02"), VALUE, ttl=90)
    assert all(85_000 < redis_client.pttl(name) <= 90_000 for name in names)
    await store.put(key("a03"), VALUE)
    assert all(redis_client.pttl(name) == -1 for name in names), "an entry that never expires: neither does its count"
    for id in ("a00", "a01", "a02", "a03"):
        await store.delete(key(id))
    assert redis_client.exists(*names) == 0


async def test_counters_and_leases_are_not_counted(store: Store) -> None:
    for id in ("a00", "a01", "a02", "a03"):
        await store.put(key(id), VALUE)
    for index in range(20):
        assert await store.incr(key(f"count{index}"), 5) == 5
        assert await store.lease(key(f"slots{index}"), "holder", 1, 30)
    assert len(await kept(store, "alice", ["a00", "a01", "a02", "a03"])) == 4


async def test_under_maxmemory_one_owners_flood_never_makes_redis_evict_anothers(
    redis_url: str, redis_client: Redis
) -> None:
    """Redis at its maxmemory evicts (allkeys-lru) whatever it likes; bounded, the flood never gets it there."""
    used = int(redis_client.info("memory")["used_memory"])
    redis_client.config_set("maxmemory-policy", "allkeys-lru")
    redis_client.config_set("maxmemory", used + 2 * 1024 * 1024)
    store = open_store(redis_url, 1000, 1 << 20, max_owner_bytes=256 * 1024)
    bob = [key(f"b{index}", "bob", "response") for index in range(20)]
    for entry in bob:
        await store.put(entry, b"bob's answer " * 300, ttl=600)
    for index in range(600):  # about 5 MiB, over twice maxmemory
        await store.put(key(f"a{index}", namespace="response"), b"x" * 8192, ttl=600)
    assert all([await store.get(entry) is not None for entry in bob]), "every one of bob's answers is still there"
    assert await store.get(key("a599", namespace="response")) is not None
    assert await store.get(key("a0", namespace="response")) is None
    await store.aclose()
