"""The Redis store: one Redis string per key, so replicas behind a load balancer share every caller's state.

Redis' own `maxmemory` (and its eviction policy) bounds the whole; entries expire by Redis' clock. The store
bounds each owner itself (`max_owner_bytes`, or the owner's own bound in `owner_bytes`), counted in Redis so every
replica and worker shares the count: a put over the owner's bound evicts that owner's least recently used entries,
never another's, so one caller's flood stays within its share instead of filling Redis until `maxmemory` evicts
others' state. An entry counts as in memory (`ENTRY_OVERHEAD` plus its key's name and its value, in bytes), so a
bound keeps the same entries in both. An owner without a bound is not counted (a plain SET and GET). Counters
(`incr`) and leases are never counted: a few small keys an owner, each expiring on its own.

The count lives beside the entries, per namespace and owner: a sorted set of the owner's key names by last use (a
counter, so entries written in one millisecond keep their order) and a hash of their sizes, with the total and
that counter under field names no key name can spell. Both are named `toolsift-quota:<namespace>:<owner>:...`,
which no `Key.name()` can spell, and expire after the longest time to live of what they count (never while an
entry without one is counted). Each put, get and delete is one script, so replicas never see half an update.
Every failure (down, timing out, refusing) becomes `StoreUnavailable`, after `timeout` seconds at most (the
connection and each reply; never retried on a timeout). Every store on the same Redis URL shares one circuit
breaker (app/store/breaker.py): once an operation fails, the next fail at once, so a hung Redis costs a request one
timeout, not one per operation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from app.store.base import STORE_TIMEOUT, Key, StoreUnavailable
from app.store.breaker import Circuit
from app.store.memory import ENTRY_OVERHEAD

T = TypeVar("T")

INDEX_PREFIX = "toolsift-quota"  # Key.name() always starts "toolsift:", so no key is named like an index

# INCRBY and a first expiry in one atomic step (EXPIRE's NX option needs Redis 7; a script runs on any version).
_INCR = """
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if ARGV[2] ~= '' and redis.call('PTTL', KEYS[1]) == -1 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return total
"""

# A sorted set of holders scored by expiry, on Redis' clock (every replica's slots expire alike): expired holders
# go first, then the holder is added (or renewed) if it holds a slot already or one is free.
_LEASE = """
local now = redis.call('TIME')
local millis = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', millis)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('ZADD', KEYS[1], millis + tonumber(ARGV[3]), ARGV[1])
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 1
end
return 0
"""

# KEYS: the entry, its owner's recency set and size hash. `forget` takes an entry out of the count (whether or not
# Redis still holds it: one that expired or that maxmemory evicted just frees what it was counted for).
_FORGET = """
local function forget(name)
    redis.call('ZREM', KEYS[2], name)
    local size = redis.call('HGET', KEYS[3], name)
    if not size then
        return tonumber(redis.call('HGET', KEYS[3], 'total') or '0')
    end
    redis.call('HDEL', KEYS[3], name)
    return redis.call('HINCRBY', KEYS[3], 'total', -tonumber(size))
end
"""

# ARGV: the value, its time to live in ms ('' for none), the owner's bound, the entry's size. Entries evicted
# here are not in KEYS (they cannot be known beforehand): fine on one Redis, not on a Redis Cluster.
_PUT = (
    _FORGET
    + """
local name, lru, sizes = KEYS[1], KEYS[2], KEYS[3]
local ttl, bound, size = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', lru) ~= redis.call('EXISTS', sizes) then
    redis.call('DEL', lru, sizes)  -- maxmemory evicted half the count: count afresh
end
local before = redis.call('PTTL', lru)
forget(name)
if size > bound then  -- larger than the owner's whole share: not kept, and nothing else of the owner's goes
    redis.call('DEL', name)
    if redis.call('ZCARD', lru) == 0 then
        redis.call('DEL', lru, sizes)
    end
    return 0
end
if ttl == '' then
    redis.call('SET', name, ARGV[1])
else
    redis.call('SET', name, ARGV[1], 'PX', ttl)
end
redis.call('HSET', sizes, name, size)
redis.call('ZADD', lru, redis.call('HINCRBY', sizes, 'clock', 1), name)
local total = redis.call('HINCRBY', sizes, 'total', size)
while total > bound do
    local oldest = redis.call('ZRANGE', lru, 0, 0)[1]
    if not oldest or oldest == name then  -- the count drifted (a half evicted): this entry is all it knows
        redis.call('HSET', sizes, 'total', size)
        break
    end
    redis.call('DEL', oldest)
    total = forget(oldest)
end
if ttl == '' then
    redis.call('PERSIST', lru)
    redis.call('PERSIST', sizes)
elseif before ~= -1 then  -- -1: it already counts an entry that never expires
    local keep = math.max(before, tonumber(ttl))
    redis.call('PEXPIRE', lru, keep)
    redis.call('PEXPIRE', sizes, keep)
end
return 1
"""
)

# A read makes the entry its owner's most recently used, in the same round trip.
_GET = """
local value = redis.call('GET', KEYS[1])
if value and redis.call('ZSCORE', KEYS[2], KEYS[1]) and redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[3], 'clock', 1), KEYS[1])
end
return value
"""

_DELETE = (
    _FORGET
    + """
forget(KEYS[1])
if redis.call('ZCARD', KEYS[2]) == 0 then
    redis.call('DEL', KEYS[2], KEYS[3])
end
return redis.call('DEL', KEYS[1])
"""
)


class RedisStore:
    """Every owner's entries in one Redis; an owner is bounded to `max_owner_bytes` when set (an owner in
    `owner_bytes` has its own bound instead) and its least recently used entries go first."""

    def __init__(
        self,
        url: str,
        max_owner_bytes: int | None = None,
        owner_bytes: Mapping[str, int] | None = None,
        timeout: float = STORE_TIMEOUT,
        client: Any = None,
        owns_client: bool | None = None,
    ) -> None:
        """`client`: a client (its connection pool) shared with the other stores on this Redis, which whoever
        opened it closes (unless `owns_client`); without one the store opens and closes its own."""
        self.max_owner_bytes = max_owner_bytes
        self.owner_bounds = dict(owner_bytes or {})
        self.circuit = circuit(url)
        self._owns_client = client is None if owns_client is None else owns_client
        self._redis: Any = client if client is not None else redis_client(url, timeout)
        self._incr: Any = self._redis.register_script(_INCR)
        self._lease: Any = self._redis.register_script(_LEASE)
        self._put: Any = self._redis.register_script(_PUT)
        self._get: Any = self._redis.register_script(_GET)
        self._delete: Any = self._redis.register_script(_DELETE)

    async def get(self, key: Key) -> bytes | None:
        try:
            if self._bound(key) is None:  # nothing counted for this owner: nothing to mark
                found: bytes | None = await self._guarded(self._redis.get, _name(key))
            else:
                found = await self._guarded(self._get, keys=_keys(key))
        except _WrongType:  # another layout's key (a list, say): absent; a put replaces it
            return None
        return found

    async def put(self, key: Key, value: bytes, ttl: float | None = None) -> bool:
        bound = self._bound(key)
        millis = None if ttl is None else _millis(ttl)
        if bound is None:
            await self._guarded(self._redis.set, _name(key), value, px=millis)
            return True
        size = ENTRY_OVERHEAD + len(_name(key)) + len(value)
        args = [value, "" if millis is None else millis, bound, size]
        return bool(await self._guarded(self._put, keys=_keys(key), args=args))

    async def delete(self, key: Key) -> bool:
        return bool(await self._guarded(self._delete, keys=_keys(key)))  # counted or not: another replica may bound it

    async def incr(self, key: Key, amount: int = 1, ttl: float | None = None) -> int:
        args = [amount, "" if ttl is None else _millis(ttl)]
        return int(await self._guarded(self._incr, keys=[_name(key)], args=args))

    async def lease(self, key: Key, holder: str, limit: int, ttl: float) -> bool:
        return bool(await self._guarded(self._lease, keys=[_name(key)], args=[holder, limit, _millis(ttl)]))

    async def release(self, key: Key, holder: str) -> None:
        await self._guarded(self._redis.zrem, _name(key), holder)

    def available(self) -> bool:
        return self.circuit.available()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._redis.aclose()

    async def _guarded(self, command: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """The command through this Redis' circuit; every failure as `StoreUnavailable`."""
        try:
            return await self.circuit.run(lambda: command(*args, **kwargs))
        except StoreUnavailable:
            raise
        except Exception as exc:
            if "WRONGTYPE" in str(exc):
                raise _WrongType(f"store unavailable: {type(exc).__name__}") from exc
            raise _unavailable(exc) from exc

    def _bound(self, key: Key) -> int | None:
        return self.owner_bounds.get(key.owner, self.max_owner_bytes)


def redis_client(url: str, timeout: float) -> Any:
    """The one way this gateway connects to a Redis: every operation bounded by `timeout`, one retry on a lost
    connection only (a Redis that restarted), so a timeout is never waited for twice."""
    import redis.asyncio as redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    retry = Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry)


class RedisBackend:
    """Redis as the gateway's store backend (`redis://`, `rediss://`, `unix://` URLs)."""

    def connect(self, url: str, timeout: float) -> Any:
        return redis_client(url, timeout)

    def open(
        self,
        url: str,
        client: Any,
        owns_client: bool,
        max_owner_bytes: int | None,
        owner_bytes: Mapping[str, int] | None,
        timeout: float,
    ) -> RedisStore:
        return RedisStore(url, max_owner_bytes, owner_bytes, timeout, client=client, owns_client=owns_client)

    async def close(self, client: Any) -> None:
        await client.aclose()


BACKEND = RedisBackend()


_CIRCUITS: dict[str, Circuit] = {}


class _WrongType(StoreUnavailable):
    """A key of another layout (one a past version wrote): a get reads it as absent, anything else fails."""


def circuit(url: str) -> Circuit:
    """The circuit of every store on the Redis at `url` (sessions, responses and limits open one each)."""
    found = _CIRCUITS.get(url)
    if found is None:
        import redis

        found = _CIRCUITS[url] = Circuit((redis.ConnectionError, redis.TimeoutError, OSError, TimeoutError))
    return found


def index_names(namespace: str, owner: str) -> tuple[bytes, bytes]:
    """The owner's recency set and size hash in `namespace`, escaped as key names are."""
    return _name(Key(namespace, owner, "lru"), INDEX_PREFIX), _name(Key(namespace, owner, "sizes"), INDEX_PREFIX)


def _keys(key: Key) -> list[bytes]:
    return [_name(key), *index_names(key.namespace, key.owner)]


def _name(key: Key, prefix: str = "toolsift") -> bytes:
    return key.name(prefix).encode("utf-8", "surrogatepass")  # the memory store's bytes for the same key


def _millis(ttl: float) -> int:
    return max(1, round(ttl * 1000))


def _unavailable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(f"store unavailable: {type(exc).__name__}")
