"""One keyed store for per-caller state, in memory or in Redis; `open_store` is the one place that picks."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from app.store.base import STORE_TIMEOUT, Key, Store, StoreUnavailable, dump_json, load_json, unavailable_level
from app.store.memory import MemoryStore

__all__ = [
    "STORE_TIMEOUT",
    "Key",
    "MemoryStore",
    "Store",
    "StoreUnavailable",
    "Stores",
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


class Stores:
    """The gateway's stores, opened in one place. Each kind of state keeps its own bounds (a store each), but in
    Redis every store on one URL shares one client, its connection pool, and one circuit breaker: one client per
    Redis per process, closed once, here."""

    def __init__(self, timeout: float = STORE_TIMEOUT) -> None:
        self.timeout = timeout
        self._clients: dict[str, Any] = {}

    def open(
        self,
        redis_url: str | None,
        max_entries: int,
        max_bytes: int,
        max_owner_bytes: int | None = None,
        owner_bytes: Mapping[str, int] | None = None,
    ) -> Store:
        """A store bounded as `open_store`'s, on this gateway's client of `redis_url` when it is set."""
        if not redis_url:
            return MemoryStore(max_entries, max_bytes, max_owner_bytes, owner_bytes=owner_bytes)
        from app.store.redis import RedisStore, redis_client

        client = self._clients.get(redis_url)
        if client is None:
            client = self._clients[redis_url] = redis_client(redis_url, self.timeout)
        return RedisStore(redis_url, max_owner_bytes, owner_bytes, self.timeout, client=client)

    @property
    def clients(self) -> int:
        """How many Redis clients are open (one per URL)."""
        return len(self._clients)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
