"""One keyed store for per-caller state, in memory or in Redis; `open_store` is the one place that picks."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from app.store.base import STORE_TIMEOUT, Key, Store, StoreUnavailable, dump_json, load_json, unavailable_level
from app.store.memory import MemoryStore

__all__ = [
    "STORE_TIMEOUT",
    "Key",
    "MemoryStore",
    "Store",
    "StoreUnavailable",
    "dump_json",
    "load_json",
    "open_store",
    "unavailable_level",
]


def open_store(
    redis_url: str | None,
    max_entries: int,
    max_bytes: int,
    max_owner_bytes: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    owner_bytes: Mapping[str, int] | None = None,
    timeout: float = STORE_TIMEOUT,
) -> Store:
    """Redis when `redis_url` is set, otherwise memory. In memory `max_entries` and `max_bytes` bound the whole; in
    Redis its own `maxmemory` does, and the store bounds each owner (shared by every replica) so that one owner's
    flood never makes Redis evict another's. Either way an owner gets `max_owner_bytes`, or its own bound in
    `owner_bytes`. `timeout` bounds each Redis operation (seconds), and every store on one Redis shares a circuit
    breaker, so a Redis that hangs costs a request one timeout."""
    if redis_url:
        from app.store.redis import RedisStore  # redis is imported only when configured

        return RedisStore(redis_url, max_owner_bytes, owner_bytes, timeout)
    return MemoryStore(max_entries, max_bytes, max_owner_bytes, clock, owner_bytes)
