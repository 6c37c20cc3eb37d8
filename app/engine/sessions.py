"""What a conversation discovered, kept between requests that share a session id.

Sessions belong to a caller: the store is keyed by the caller's `Identity` and the session id, so two callers
that pick the same id never see each other's tools. In memory by default: bounded in entries and in bytes
(least recently used sessions go first) and expiring, so a gateway that serves many clients for months uses
flat memory whatever ids they send. With `sessions.redis_url`, sessions live in Redis instead, so several
replicas behind a load balancer behave as one. Without a session id a request starts from the config and its
history. A session store that fails never fails a request: it is only a saved search round.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

from app.errors import RequestRefused
from app.identity import Identity

log = logging.getLogger("toolsift.sessions")
KEY_PREFIX = "toolsift:session:"
ENTRY_OVERHEAD = 200  # bytes: the dict slot, tuple, list and float around a session, roughly
NAME_OVERHEAD = 60  # bytes: a str object and its list slot, roughly


class SessionKey(NamedTuple):
    identity: Identity
    id: str


def session_for(identity: Identity, transport: str | None, body: str | None, limit: int) -> SessionKey | None:
    """The request's session: its caller and its id (the transport's `X-Session-Id` wins over a body's
    `session_id`; both have the same cap), or None without an id."""
    for value, param in ((transport, "X-Session-Id"), (body, "session_id")):
        if value and len(value) > limit:
            raise RequestRefused(
                f"Invalid request: '{param}' is {len(value):,} characters; this gateway accepts at most {limit:,}.",
                param=param,
                code="session_id_too_long",
            )
    session_id = transport or body
    return SessionKey(identity, session_id) if session_id else None


class Sessions(Protocol):
    async def tools(self, session: SessionKey) -> list[str]: ...

    async def remember(self, session: SessionKey, names: Iterable[str]) -> None: ...

    async def aclose(self) -> None: ...


class SessionStore:
    """In memory, bounded by `max_sessions`, by `max_bytes` (estimated) and by `max_tools` names a session."""

    def __init__(
        self,
        ttl_seconds: float,
        max_sessions: int,
        max_bytes: int = 16 * 1024 * 1024,
        max_tools: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl_seconds
        self.max_sessions = max_sessions
        self.max_bytes = max_bytes
        self.max_tools = max_tools
        self.bytes = 0
        self._clock = clock
        self._sessions: OrderedDict[tuple[str, str], tuple[float, list[str]]] = OrderedDict()

    async def tools(self, session: SessionKey) -> list[str]:
        key = (session.identity.id, session.id)
        found = self._sessions.get(key)
        if found is None:
            return []
        stamp, names = found
        if self._clock() - stamp > self.ttl:
            self._forget(key)
            return []
        return list(names)

    async def remember(self, session: SessionKey, names: Iterable[str]) -> None:
        key = (session.identity.id, session.id)
        known = await self.tools(session)
        known.extend(name for name in dict.fromkeys(names) if name not in known)
        known = known[-self.max_tools :]  # a session that keeps searching keeps its latest finds
        self._forget(key)
        self._sessions[key] = (self._clock(), known)
        self.bytes += _size(key, known)
        while self._sessions and (len(self._sessions) > self.max_sessions or self.bytes > self.max_bytes):
            self._forget(next(iter(self._sessions)))

    def _forget(self, key: tuple[str, str]) -> None:
        found = self._sessions.pop(key, None)
        if found is not None:
            self.bytes -= _size(key, found[1])

    async def aclose(self) -> None:
        return None

    def __len__(self) -> int:
        return len(self._sessions)


def _size(key: tuple[str, str], names: list[str]) -> int:
    text = sum(len(part.encode("utf-8", "surrogatepass")) for part in (*key, *names))
    return ENTRY_OVERHEAD + NAME_OVERHEAD * len(names) + text


class RedisSessionStore:
    """One Redis list per (identity, session) (discovery order kept, for stable upstream prompts), holding at
    most `max_tools` names and expiring after `ttl`; Redis' own `maxmemory` bounds the whole."""

    def __init__(self, url: str, ttl_seconds: float, max_tools: int = 256) -> None:
        import redis.asyncio as redis

        self.ttl = max(1, int(ttl_seconds))
        self.max_tools = max_tools
        self._redis: Any = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    async def tools(self, session: SessionKey) -> list[str]:
        try:
            raw = await self._redis.lrange(redis_key(session), 0, -1)
        except Exception as exc:  # a session is an optimisation, never a failure
            log.warning("session store unavailable: %s", type(exc).__name__)
            return []
        return [item.decode() for item in raw]

    async def remember(self, session: SessionKey, names: Iterable[str]) -> None:
        key = redis_key(session)
        try:
            known = {item.decode() for item in await self._redis.lrange(key, 0, -1)}
            new = [name for name in dict.fromkeys(names) if name not in known]
            async with self._redis.pipeline(transaction=True) as pipe:
                if new:
                    pipe.rpush(key, *new)
                    pipe.ltrim(key, -self.max_tools, -1)
                pipe.expire(key, self.ttl)
                await pipe.execute()
        except Exception as exc:
            log.warning("session store unavailable: %s", type(exc).__name__)

    async def aclose(self) -> None:
        await self._redis.aclose()


def redis_key(session: SessionKey) -> str:
    return f"{KEY_PREFIX}{session.identity.id}:{session.id}"


def session_store(
    ttl_seconds: float, max_sessions: int, redis_url: str | None, max_bytes: int, max_tools: int
) -> Sessions:
    if redis_url:
        return RedisSessionStore(redis_url, ttl_seconds, max_tools)
    return SessionStore(ttl_seconds, max_sessions, max_bytes, max_tools)
