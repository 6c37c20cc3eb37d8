"""Stored responses of the Responses API: what `previous_response_id` continues and `GET /v1/responses/{id}` reads.

A stored response belongs to the caller that made it (its `Identity`); another caller asking for it is told it
does not exist. Kept as JSON text, so the in-memory store knows its size exactly and Redis holds the same thing.
In memory by default, bounded in count and bytes (least recently used out first) and expiring; with
`sessions.redis_url`, in Redis (one key per response, expiring), so replicas behind a load balancer share them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from app.core.model import JsonObject
from app.errors import GatewayError
from app.identity import Identity

log = logging.getLogger("toolsift.responses")
KEY_PREFIX = "toolsift:response:"
ENTRY_OVERHEAD = 200  # bytes around an entry (dict slot, tuple, str headers), roughly
OFF_LOOP_BYTES = 256 * 1024  # larger conversations are encoded and decoded in a worker thread (milliseconds)


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A response as answered (`response`), the conversation it ended (`items`: its input items, those of the
    responses it continued included, then its output, in Responses wire items) and the tools it had found."""

    response: JsonObject
    items: list[JsonObject]
    tools: list[str]
    size: int = 0  # its JSON text's length, as read from the store


async def _off_loop_if_large(size: int, function: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(function, *args) if size > OFF_LOOP_BYTES else function(*args)


class ResponseStore(Protocol):
    async def save(self, owner: Identity, stored: StoredResponse, size_hint: int = 0) -> None:
        """`size_hint`: about how large the conversation is (its request bodies), to encode a large one off-loop."""
        ...

    async def get(self, owner: Identity, response_id: str) -> StoredResponse | None: ...

    async def delete(self, owner: Identity, response_id: str) -> bool: ...

    async def aclose(self) -> None: ...


def _encode(owner: Identity, stored: StoredResponse) -> str:
    fields = {"owner": owner.id, "response": stored.response, "items": stored.items, "tools": stored.tools}
    return json.dumps(fields, ensure_ascii=False)


def _decode(owner: Identity, text: str | bytes) -> StoredResponse | None:
    """The stored response when `owner` owns it; None for anyone else (a 404 that tells nothing)."""
    found = json.loads(text)
    if found.get("owner") != owner.id:
        return None
    return StoredResponse(found["response"], found["items"], found["tools"], len(text))


class MemoryResponseStore:
    """In memory, at most `max_responses` and about `max_bytes`, each for `ttl` seconds after it was stored."""

    def __init__(
        self, ttl_seconds: float, max_responses: int, max_bytes: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl_seconds
        self.max_responses = max_responses
        self.max_bytes = max_bytes
        self.bytes = 0
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()

    async def save(self, owner: Identity, stored: StoredResponse, size_hint: int = 0) -> None:
        response_id = str(stored.response["id"])
        text: str = await _off_loop_if_large(size_hint, _encode, owner, stored)
        self._forget(response_id)
        self._entries[response_id] = (self._clock(), text)
        self.bytes += _size(response_id, text)
        while self._entries and (len(self._entries) > self.max_responses or self.bytes > self.max_bytes):
            self._forget(next(iter(self._entries)))

    async def get(self, owner: Identity, response_id: str) -> StoredResponse | None:
        found = self._entries.get(response_id)
        if found is None:
            return None
        stamp, text = found
        if self._clock() - stamp > self.ttl:
            self._forget(response_id)
            return None
        stored: StoredResponse | None = await _off_loop_if_large(len(text), _decode, owner, text)
        if stored is not None:
            self._entries.move_to_end(response_id)
        return stored

    async def delete(self, owner: Identity, response_id: str) -> bool:
        if await self.get(owner, response_id) is None:
            return False
        self._forget(response_id)
        return True

    def _forget(self, response_id: str) -> None:
        found = self._entries.pop(response_id, None)
        if found is not None:
            self.bytes -= _size(response_id, found[1])

    async def aclose(self) -> None:
        return None

    def __len__(self) -> int:
        return len(self._entries)


def _size(response_id: str, text: str) -> int:
    return ENTRY_OVERHEAD + len(response_id) + len(text.encode("utf-8", "surrogatepass"))


class RedisResponseStore:
    """One Redis string per response, expiring after `ttl`; Redis' own `maxmemory` bounds the whole. A store that
    is down loses a save (logged; the answer still goes out) and fails a read with a 503: a continuation must not
    silently start from nothing."""

    def __init__(self, url: str, ttl_seconds: float) -> None:
        import redis.asyncio as redis

        self.ttl = max(1, int(ttl_seconds))
        self._redis: Any = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    async def save(self, owner: Identity, stored: StoredResponse, size_hint: int = 0) -> None:
        text = await _off_loop_if_large(size_hint, _encode, owner, stored)
        try:
            await self._redis.set(KEY_PREFIX + str(stored.response["id"]), text, ex=self.ttl)
        except Exception as exc:
            log.warning("response store unavailable: %s", type(exc).__name__)

    async def get(self, owner: Identity, response_id: str) -> StoredResponse | None:
        try:
            text = await self._redis.get(KEY_PREFIX + response_id)
        except Exception as exc:
            log.warning("response store unavailable: %s", type(exc).__name__)
            raise GatewayError(503, "The response store is unavailable; try again.", "server_error") from None
        if text is None:
            return None
        found: StoredResponse | None = await _off_loop_if_large(len(text), _decode, owner, text)
        return found

    async def delete(self, owner: Identity, response_id: str) -> bool:
        if await self.get(owner, response_id) is None:
            return False
        try:
            await self._redis.delete(KEY_PREFIX + response_id)
        except Exception as exc:
            log.warning("response store unavailable: %s", type(exc).__name__)
            raise GatewayError(503, "The response store is unavailable; try again.", "server_error") from None
        return True

    async def aclose(self) -> None:
        await self._redis.aclose()


def response_store(ttl_seconds: float, max_responses: int, max_bytes: int, redis_url: str | None) -> ResponseStore:
    if redis_url:
        return RedisResponseStore(redis_url, ttl_seconds)
    return MemoryResponseStore(ttl_seconds, max_responses, max_bytes)
