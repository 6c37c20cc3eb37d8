"""What a conversation discovered, kept between requests that share a session id.

In memory by default: bounded (least recently used sessions go first) and expiring, so a gateway that serves
many clients for months uses flat memory. With `sessions.redis_url`, sessions live in Redis instead, so
several replicas behind a load balancer behave as one. Without a session id a request starts from the config
and its history. A session store that fails never fails a request: it is only a saved search round.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Protocol

log = logging.getLogger("toolsift.sessions")
KEY_PREFIX = "toolsift:session:"


class Sessions(Protocol):
    async def tools(self, session_id: str) -> list[str]: ...

    async def remember(self, session_id: str, names: Iterable[str]) -> None: ...

    async def aclose(self) -> None: ...


class SessionStore:
    def __init__(self, ttl_seconds: float, max_sessions: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl_seconds
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: OrderedDict[str, tuple[float, list[str]]] = OrderedDict()

    async def tools(self, session_id: str) -> list[str]:
        found = self._sessions.get(session_id)
        if found is None:
            return []
        stamp, names = found
        if self._clock() - stamp > self.ttl:
            del self._sessions[session_id]
            return []
        return list(names)

    async def remember(self, session_id: str, names: Iterable[str]) -> None:
        known = await self.tools(session_id)
        known.extend(name for name in names if name not in known)
        self._sessions[session_id] = (self._clock(), known)
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

    async def aclose(self) -> None:
        return None

    def __len__(self) -> int:
        return len(self._sessions)


class RedisSessionStore:
    """One Redis list per session (discovery order kept, for stable upstream prompts), expiring after `ttl`."""

    def __init__(self, url: str, ttl_seconds: float) -> None:
        import redis.asyncio as redis

        self.ttl = max(1, int(ttl_seconds))
        self._redis: Any = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    async def tools(self, session_id: str) -> list[str]:
        try:
            raw = await self._redis.lrange(KEY_PREFIX + session_id, 0, -1)
        except Exception as exc:  # a session is an optimisation, never a failure
            log.warning("session store unavailable: %s", type(exc).__name__)
            return []
        return [item.decode() for item in raw]

    async def remember(self, session_id: str, names: Iterable[str]) -> None:
        key = KEY_PREFIX + session_id
        try:
            known = {item.decode() for item in await self._redis.lrange(key, 0, -1)}
            new = [name for name in dict.fromkeys(names) if name not in known]
            async with self._redis.pipeline(transaction=True) as pipe:
                if new:
                    pipe.rpush(key, *new)
                pipe.expire(key, self.ttl)
                await pipe.execute()
        except Exception as exc:
            log.warning("session store unavailable: %s", type(exc).__name__)

    async def aclose(self) -> None:
        await self._redis.aclose()


def session_store(ttl_seconds: float, max_sessions: int, redis_url: str | None) -> Sessions:
    if redis_url:
        return RedisSessionStore(redis_url, ttl_seconds)
    return SessionStore(ttl_seconds, max_sessions)
