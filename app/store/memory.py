"""The in-process store: one least-recently-used map, bounded in entries and in real bytes, overall and per owner.

It holds each entry as its key's name and its value, both bytes, so its byte count is exactly what it holds plus
`ENTRY_OVERHEAD` an entry (the map slots, the entry record and the bytes objects' headers). One caller never
evicts another's entries: a caller over its own bound (`max_owner_bytes`) loses its own least recently used entries,
and when the whole store is over a bound the least recently used entry of the largest owner (in bytes) goes, so
the caller that filled the store pays for it. Expired entries are dropped when read, and first when the store is
over a bound and the oldest entry has expired.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

from app.store.base import Key

ENTRY_OVERHEAD = 200  # bytes around an entry: two map slots, the record, two bytes headers and a float, roughly


class _Owner:
    """One owner's entries, least recently used first, and their bytes."""

    __slots__ = ("bytes", "keys", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.bytes = 0
        self.keys: OrderedDict[bytes, None] = OrderedDict()


class _Entry:
    __slots__ = ("expires", "owner", "size", "value")

    def __init__(self, value: bytes, owner: _Owner, expires: float | None, size: int) -> None:
        self.value, self.owner, self.expires, self.size = value, owner, expires, size


class MemoryStore:
    """At most `max_entries` entries and `max_bytes` bytes, and `max_owner_bytes` bytes an owner when set (an owner
    in `owner_bytes` has its own bound instead); a value larger than a bound it must fit is not kept."""

    def __init__(
        self,
        max_entries: int,
        max_bytes: int,
        max_owner_bytes: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        owner_bytes: Mapping[str, int] | None = None,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_owner_bytes = max_owner_bytes
        self.owner_bounds = dict(owner_bytes or {})  # owners with a bound of their own (an identity's stored_bytes)
        self.bytes = 0
        self._clock = clock
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._owners: dict[str, _Owner] = {}
        self._leases: dict[bytes, dict[str, float]] = {}  # key -> holder -> expiry; a few per caller, not bounded

    async def get(self, key: Key) -> bytes | None:
        found = self._live(_name(key))
        return None if found is None else found.value

    async def put(self, key: Key, value: bytes, ttl: float | None = None) -> bool:
        return self._set(key, value, None if ttl is None else self._clock() + ttl)

    async def delete(self, key: Key) -> bool:
        name = _name(key)
        found = self._live(name)
        if found is not None:
            self._drop(name)
        return found is not None

    async def incr(self, key: Key, amount: int = 1, ttl: float | None = None) -> int:
        found = self._live(_name(key))
        total = (int(found.value) if found is not None else 0) + amount
        expires = found.expires if found is not None else None
        if expires is None and ttl is not None:
            expires = self._clock() + ttl
        self._set(key, str(total).encode(), expires)
        return total

    async def lease(self, key: Key, holder: str, limit: int, ttl: float) -> bool:
        now = self._clock()
        name = _name(key)
        held = {who: until for who, until in self._leases.get(name, {}).items() if until > now}
        if holder not in held and len(held) >= limit:
            self._leases[name] = held
            return False
        held[holder] = now + ttl
        self._leases[name] = held
        return True

    async def release(self, key: Key, holder: str) -> None:
        name = _name(key)
        held = self._leases.get(name, {})
        held.pop(holder, None)
        if not held:
            self._leases.pop(name, None)

    def available(self) -> bool:
        return True

    async def aclose(self) -> None:
        return None

    def owner_bytes(self, owner: str) -> int:
        found = self._owners.get(owner)
        return 0 if found is None else found.bytes

    def __len__(self) -> int:
        return len(self._entries)

    def _live(self, name: bytes) -> _Entry | None:
        """The entry, marked most recently used; None when absent or expired (then dropped)."""
        found = self._entries.get(name)
        if found is None:
            return None
        if found.expires is not None and self._clock() >= found.expires:
            self._drop(name)
            return None
        self._entries.move_to_end(name)
        found.owner.keys.move_to_end(name)
        return found

    def _set(self, key: Key, value: bytes, expires: float | None) -> bool:
        """False when the value is larger than the owner's bound or the whole store's: not kept, and nothing else
        goes for it (the key's old value aside, which it replaced)."""
        name = _name(key)
        self._drop(name)
        size = ENTRY_OVERHEAD + len(name) + len(value)
        bound = self.owner_bounds.get(key.owner, self.max_owner_bytes)
        if size > self.max_bytes or (bound is not None and size > bound):
            return False
        owner = self._owners.get(key.owner)
        if owner is None:
            owner = self._owners[key.owner] = _Owner(key.owner)
        entry = _Entry(value, owner, expires, size)
        self._entries[name] = entry
        owner.keys[name] = None
        owner.bytes += entry.size
        self.bytes += entry.size
        if bound is not None:
            while owner.bytes > bound:
                self._drop(next(iter(owner.keys)))
        while self._entries and (len(self._entries) > self.max_entries or self.bytes > self.max_bytes):
            self._drop(self._victim())
        return True

    def _victim(self) -> bytes:
        """What goes when the whole store is over a bound: its oldest entry when that has expired, otherwise the
        least recently used entry of the owner holding the most bytes."""
        oldest = next(iter(self._entries))
        expires = self._entries[oldest].expires
        if expires is not None and self._clock() >= expires:
            return oldest
        largest = max(self._owners.values(), key=_held)
        return next(iter(largest.keys))

    def _drop(self, name: bytes) -> None:
        found = self._entries.pop(name, None)
        if found is None:
            return
        owner = found.owner
        del owner.keys[name]
        owner.bytes -= found.size
        self.bytes -= found.size
        if not owner.keys:
            del self._owners[owner.name]


def _held(owner: _Owner) -> int:
    return owner.bytes


def _name(key: Key) -> bytes:
    return key.name().encode("utf-8", "surrogatepass")  # an id from a JSON body may hold a lone surrogate
