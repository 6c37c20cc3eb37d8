"""One keyed store for per-caller state, in memory or in a shared backend picked by its URL's scheme.

`Stores` is the one place a store is opened: the gateway's, each kind of state with its own bounds (sessions and
what lives beside them, stored responses, limit counters), every store on one URL over one client, closed once;
`open_store` opens one on a client of its own (the benches' and tests'). A new backend is its module (a `Backend`)
and a line in `BACKENDS`; the contract tests (tests/unit/store/test_store.py) take it as a parameter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from app.store.base import (
    STORE_TIMEOUT,
    Backend,
    Key,
    Store,
    StoreUnavailable,
    dump_json,
    load_json,
    unavailable_level,
)
from app.store.memory import MemoryStore

__all__ = [
    "BACKENDS",
    "STORE_TIMEOUT",
    "Backend",
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


def _redis() -> Backend:
    from app.store.redis import BACKEND  # redis is imported only when configured

    return BACKEND


# The shared backends, by URL scheme: each imported when a URL of its scheme is configured.
BACKENDS: dict[str, Callable[[], Backend]] = {"redis": _redis, "rediss": _redis, "unix": _redis}


def backend_for(url: str) -> Backend:
    scheme = urlsplit(url).scheme
    if scheme not in BACKENDS:
        raise ValueError(f"no store backend for {scheme or url!r} URLs; known: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[scheme]()


class Stores:
    """The gateway's stores, opened in one place. Each kind of state keeps its own bounds (a store each), but every
    store on one URL shares one client, its connection pool, and one circuit breaker: one client per URL per
    process, closed once, here."""

    def __init__(self, timeout: float = STORE_TIMEOUT) -> None:
        self.timeout = timeout
        self._clients: dict[str, tuple[Backend, Any]] = {}

    def client(self, url: str) -> Any:
        """This gateway's client of `url`, connected on first use."""
        found = self._clients.get(url)
        if found is None:
            backend = backend_for(url)
            found = self._clients[url] = (backend, backend.connect(url, self.timeout))
        return found[1]

    def open(
        self,
        url: str | None,
        max_entries: int,
        max_bytes: int,
        max_owner_bytes: int | None = None,
        owner_bytes: Mapping[str, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> Store:
        """A store at `url`, or in memory without one. In memory `max_entries` and `max_bytes` bound the whole; in
        a shared backend its own memory limit does, and the store bounds each owner (shared by every replica) so
        that one owner's flood never makes it evict another's. Either way an owner gets `max_owner_bytes`, or its
        own bound in `owner_bytes`. Each operation is bounded by the timeout, and every store on one URL shares a
        circuit breaker, so a backend that hangs costs a request one timeout."""
        if not url:
            return MemoryStore(max_entries, max_bytes, max_owner_bytes, clock, owner_bytes)
        client = self.client(url)
        return self._clients[url][0].open(url, client, False, max_owner_bytes, owner_bytes, self.timeout)

    @property
    def clients(self) -> int:
        """How many backend clients are open (one per URL)."""
        return len(self._clients)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for backend, client in clients:
            await backend.close(client)


def open_store(
    redis_url: str | None,
    max_entries: int,
    max_bytes: int,
    max_owner_bytes: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    owner_bytes: Mapping[str, int] | None = None,
    timeout: float = STORE_TIMEOUT,
) -> Store:
    """A store as `Stores.open` opens one, on a client of its own that the store closes (benches and tests)."""
    if not redis_url:
        return Stores(timeout).open(None, max_entries, max_bytes, max_owner_bytes, owner_bytes, clock)
    backend = backend_for(redis_url)
    client = backend.connect(redis_url, timeout)
    return backend.open(redis_url, client, True, max_owner_bytes, owner_bytes, timeout)
