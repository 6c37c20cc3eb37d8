"""One keyed store for per-caller state, in memory or in Redis; `open_store` is the one place that picks."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from app.store.base import Key, Store, StoreUnavailable, dump_json, load_json
from app.store.memory import MemoryStore

__all__ = ["Key", "MemoryStore", "Store", "StoreUnavailable", "dump_json", "load_json", "open_store"]


def open_store(
    redis_url: str | None,
    max_entries: int,
    max_bytes: int,
    max_owner_bytes: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    owner_bytes: Mapping[str, int] | None = None,
) -> Store:
    """Redis when `redis_url` is set (the bounds are then Redis' own `maxmemory`), otherwise memory; `owner_bytes`
    bounds some owners apart from `max_owner_bytes`."""
    if redis_url:
        from app.store.redis import RedisStore  # redis is imported only when configured

        return RedisStore(redis_url)
    return MemoryStore(max_entries, max_bytes, max_owner_bytes, clock, owner_bytes)
