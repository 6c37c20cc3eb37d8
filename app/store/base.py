"""The keyed store every piece of per-caller state lives in: sessions, stored responses, MCP client state, counters.

A key names its namespace (what kind of state), its owner (the caller's identity id, so one caller's state is
never another's and can be bounded per caller) and an id. Values are bytes, serialized once by the caller, so
the memory backend measures exactly what it holds and Redis holds the same bytes. A backend that cannot answer
raises `StoreUnavailable`; each caller decides what that costs (a session acts as empty, a continuation fails, a
response is answered as not stored).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

STORE_TIMEOUT = 0.25  # seconds a backend operation may take (`store.timeout_ms`' default)


class Key(NamedTuple):
    namespace: str
    owner: str
    id: str

    def name(self, prefix: str = "toolsift") -> str:
        """One string for the key, as Redis names it: `toolsift:<namespace>:<owner>:<id>`. A ':' (or '%') in the
        namespace or the owner is escaped, so no owner and id can spell another owner's key."""
        return f"{prefix}:{_escaped(self.namespace)}:{_escaped(self.owner)}:{self.id}"


def _escaped(part: str) -> str:
    return part.replace("%", "%25").replace(":", "%3A")


class StoreUnavailable(Exception):
    """The backend did not answer (Redis down or timing out); the message names the cause's type only."""


class CircuitOpen(StoreUnavailable):
    """Refused at once while the backend's circuit is open: the failure that opened it was logged then, so each
    refusal is not logged again (one outage, a few lines, not one per operation of every request)."""


def unavailable_level(exc: StoreUnavailable) -> int:
    """The log level for a caller's line about `exc`: a warning for a failure, debug for a refusal of an open
    circuit."""
    return logging.DEBUG if isinstance(exc, CircuitOpen) else logging.WARNING


class Store(Protocol):
    """Bytes by key, each for `ttl` seconds from its last write (None: until evicted), least recently used out
    first when a backend bounds its size."""

    async def get(self, key: Key) -> bytes | None: ...

    async def put(self, key: Key, value: bytes, ttl: float | None = None) -> bool:
        """True when the value is kept; False when it is larger than a bound it must fit (the owner's share, or the
        whole store): then it is not kept, whatever the key held before is gone, and nothing else is evicted."""
        ...

    async def delete(self, key: Key) -> bool:
        """True when the key held a value."""
        ...

    async def incr(self, key: Key, amount: int = 1, ttl: float | None = None) -> int:
        """Add `amount` to the integer at `key` (0 when absent) in one atomic step and return the sum; `ttl`
        applies only when the key has no expiry yet, so a counter's window starts at its first increment."""
        ...

    async def lease(self, key: Key, holder: str, limit: int, ttl: float) -> bool:
        """Hold one of `limit` slots at `key` for `ttl` seconds (a holder that has one renews it): False when all
        are held. Slots expire on their own, so a process that dies without releasing frees them within `ttl`."""
        ...

    async def release(self, key: Key, holder: str) -> None: ...

    def available(self) -> bool:
        """False while the backend is known to be down (its circuit open): a caller can say so before it tries."""
        ...

    async def aclose(self) -> None: ...


def dump_json(value: object) -> bytes:
    """JSON as UTF-8, the way callers serialize values; a lone surrogate (valid in a JSON string, not in UTF-8)
    passes through and back, as a request may carry one."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def load_json(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8", "surrogatepass"))


class Backend(Protocol):
    """A kind of shared store, picked by its URL's scheme (app/store/__init__.py): the client it connects with,
    shared by every store on one URL, and a store bounded per owner over that client."""

    def connect(self, url: str, timeout: float) -> Any:
        """A client of `url`, every operation bounded by `timeout` seconds."""
        ...

    def open(
        self,
        url: str,
        client: Any,
        owns_client: bool,
        max_owner_bytes: int | None,
        owner_bytes: Mapping[str, int] | None,
        timeout: float,
    ) -> Store:
        """A store on `client`, which it closes at its `aclose` when it `owns_client`."""
        ...

    async def close(self, client: Any) -> None: ...
