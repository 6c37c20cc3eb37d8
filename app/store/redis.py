"""The Redis store: one Redis string per key, so replicas behind a load balancer share every caller's state.

Redis' own `maxmemory` (and its eviction policy) bounds the whole; entries expire by Redis' clock. Every
failure (down, timing out, refusing) becomes `StoreUnavailable`, after a timeout of two seconds at most.
"""

from __future__ import annotations

from typing import Any

from app.store.base import Key, StoreUnavailable

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


class RedisStore:
    def __init__(self, url: str) -> None:
        import redis.asyncio as redis

        self._redis: Any = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._incr: Any = self._redis.register_script(_INCR)
        self._lease: Any = self._redis.register_script(_LEASE)

    async def get(self, key: Key) -> bytes | None:
        try:
            found: bytes | None = await self._redis.get(_name(key))
        except Exception as exc:
            if str(exc).startswith("WRONGTYPE"):  # another layout's key (a list, say): absent; a put replaces it
                return None
            raise _unavailable(exc) from exc
        return found

    async def put(self, key: Key, value: bytes, ttl: float | None = None) -> None:
        try:
            await self._redis.set(_name(key), value, px=None if ttl is None else _millis(ttl))
        except Exception as exc:
            raise _unavailable(exc) from exc

    async def delete(self, key: Key) -> bool:
        try:
            return bool(await self._redis.delete(_name(key)))
        except Exception as exc:
            raise _unavailable(exc) from exc

    async def incr(self, key: Key, amount: int = 1, ttl: float | None = None) -> int:
        try:
            total = await self._incr(keys=[_name(key)], args=[amount, "" if ttl is None else _millis(ttl)])
        except Exception as exc:
            raise _unavailable(exc) from exc
        return int(total)

    async def lease(self, key: Key, holder: str, limit: int, ttl: float) -> bool:
        try:
            return bool(await self._lease(keys=[_name(key)], args=[holder, limit, _millis(ttl)]))
        except Exception as exc:
            raise _unavailable(exc) from exc

    async def release(self, key: Key, holder: str) -> None:
        try:
            await self._redis.zrem(_name(key), holder)
        except Exception as exc:
            raise _unavailable(exc) from exc

    async def aclose(self) -> None:
        await self._redis.aclose()


def _name(key: Key) -> bytes:
    return key.name().encode("utf-8", "surrogatepass")  # the memory store's bytes for the same key


def _millis(ttl: float) -> int:
    return max(1, round(ttl * 1000))


def _unavailable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(f"store unavailable: {type(exc).__name__}")
