"""The keyed store in Redis: the same behaviour as in memory (the shared tests of tests/unit/store, run on a real
redis-server), and what Redis leaves behind from older versions."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator

import pytest

from app.common.identity import Identity
from app.engine.sessions import SessionKey, Sessions
from app.store import open_store
from tests.unit.store.test_store import (
    SEMANTICS_TIMEOUT,
    Backend,
    test_entries_expire_their_ttl_after_their_last_write,
    test_incr_counts_within_a_window_set_by_the_first_increment,
    test_incr_is_atomic_across_concurrent_callers,
    test_leases_are_bounded_renewed_and_expire_on_their_own,
    test_values_come_back_as_stored_and_owners_never_meet,
)

# The shared tests, collected here once more against the Redis `backend` below.
__all__ = [
    "test_entries_expire_their_ttl_after_their_last_write",
    "test_incr_counts_within_a_window_set_by_the_first_increment",
    "test_incr_is_atomic_across_concurrent_callers",
    "test_leases_are_bounded_renewed_and_expire_on_their_own",
    "test_values_come_back_as_stored_and_owners_never_meet",
]

NEEDS_REDIS = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)"
)


@pytest.fixture(
    params=[
        pytest.param(None, id="redis", marks=NEEDS_REDIS),
        pytest.param(1 << 20, id="redis-bounded", marks=NEEDS_REDIS),
    ]
)
async def backend(redis_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """A flushed Redis database of the module's own redis-server; bounded per owner, puts, gets and deletes keep
    a count beside the entries."""
    import redis

    with redis.Redis.from_url(redis_url) as client:
        client.flushdb()
    store = open_store(redis_url, 1000, 1 << 20, max_owner_bytes=request.param, timeout=SEMANTICS_TIMEOUT)
    yield Backend(store, asyncio.sleep)
    await store.aclose()


@NEEDS_REDIS
async def test_a_redis_key_of_another_type_reads_as_absent_and_a_put_replaces_it(redis_url: str) -> None:
    """Sessions were Redis lists before they were values: one left behind is an empty session, then a new one."""
    import redis

    for bound in (None, 1 << 20):  # a plain GET, and the script that marks a counted entry used
        with redis.Redis.from_url(redis_url) as client:
            client.delete("toolsift:session:alice:old")
            client.rpush("toolsift:session:alice:old", "a_tool")
        sessions = Sessions(open_store(redis_url, 1000, 1 << 20, max_owner_bytes=bound), ttl_seconds=60)
        old = SessionKey(Identity("alice"), "old")
        assert list(await sessions.found(old)) == []
        await sessions.remember(old, ["b_tool"])
        assert list(await sessions.found(old)) == ["b_tool"]
        await sessions.aclose()
