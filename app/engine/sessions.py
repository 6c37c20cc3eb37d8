"""What a conversation discovered, kept between requests that share a session id.

Sessions belong to a caller: the store is keyed by the caller's `Identity` and the session id, so two callers
that pick the same id never see each other's tools. In memory by default: bounded in entries and in bytes
(least recently used sessions go first) and expiring, so a gateway that serves many clients for months uses
flat memory whatever ids they send. With `store.redis_url`, sessions live in Redis instead, so several
replicas behind a load balancer behave as one. Either way they live in the keyed store (`app.store`), one JSON list
a session of its tools in discovery order, each with the turn that first called it (the number of user messages the
conversation had then): an upstream that defers tools itself loads each one there, the same place every time.
Without a session id a request starts from the config and its history. A session store that fails never fails a
request: it is only a saved search round.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from app.common.errors import RequestRefused
from app.common.identity import Identities, Identity
from app.config import SessionConfig
from app.store import Key, Store, Stores, StoreUnavailable, dump_json, load_json, unavailable_level

log = logging.getLogger("toolsift.sessions")
NAMESPACE = "session"  # in Redis: toolsift:session:<identity>:<session id>


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


class Sessions:
    """Each session's tool names, at most `max_tools` (the latest kept), each session expiring `ttl` seconds after
    its last request."""

    def __init__(self, store: Store, ttl_seconds: float, max_tools: int = 256) -> None:
        self.store = store
        self.ttl = ttl_seconds
        self.max_tools = max_tools

    async def found(self, session: SessionKey) -> dict[str, int]:
        """The session's tools, in discovery order, each with the turn that first called it (0: not called yet)."""
        try:
            found = await self.store.get(_key(session))
        except StoreUnavailable as exc:  # a session is an optimisation, never a failure
            log.log(unavailable_level(exc), "session %s", exc)
            return {}
        return _found(found)

    async def remember(self, session: SessionKey, names: Iterable[str], turns: Mapping[str, int] | None = None) -> None:
        """Add what this request discovered (`turns`: the turn that first called each), and start the session's time
        to live again."""
        key = _key(session)
        try:
            known = _found(await self.store.get(key))
            for name in names:
                known[name] = known.get(name) or (turns or {}).get(name, 0)
            if known:
                kept = list(known.items())[-self.max_tools :]  # a session that keeps searching keeps its latest
                await self.store.put(key, dump_json([[name, turn] for name, turn in kept]), self.ttl)
        except StoreUnavailable as exc:
            log.log(unavailable_level(exc), "session %s", exc)

    async def aclose(self) -> None:
        await self.store.aclose()


def _key(session: SessionKey) -> Key:
    return Key(NAMESPACE, session.identity.id, session.id)


def _found(value: bytes | None) -> dict[str, int]:
    """A stored session: `[name, turn]` pairs, or the names alone of a session an earlier version stored."""
    found: dict[str, int] = {}
    for entry in load_json(value) if value is not None else ():
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], int):
            found[str(entry[0])] = entry[1]
        else:
            found[str(entry)] = 0
    return found


def session_store(
    config: SessionConfig, redis_url: str | None, stores: Stores, identities: Identities | None = None
) -> Sessions:
    owners = identities.stored_bytes() if identities is not None else None
    store = stores.open(redis_url, config.max_sessions, config.max_bytes, config.max_bytes_per_identity, owners)
    return Sessions(store, config.ttl_seconds, config.max_tools)
