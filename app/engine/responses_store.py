"""Stored responses of the Responses API: what `previous_response_id` continues and `GET /v1/responses/{id}` reads.

A stored response belongs to the caller that made it (its `Identity`, the owner in its store key); another
caller asking for it is told it does not exist. Kept in the keyed store (`app.store`) as JSON bytes, so the
in-memory store knows its size exactly and Redis holds the same thing. In memory by default, bounded in count
and bytes, overall and per caller (the largest caller's least recently used out first) and expiring; with
`store.redis_url`, in Redis (one key per response, `toolsift:response:<identity>:<id>`, expiring), so replicas
behind a load balancer share them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from app.common.errors import GatewayError
from app.common.identity import Identities, Identity
from app.common.offload import in_thread_if_large
from app.config import ResponsesStoreConfig
from app.core.model import JsonObject
from app.store import Key, Store, Stores, StoreUnavailable, dump_json, load_json, unavailable_level

log = logging.getLogger("toolsift.responses")
NAMESPACE = "response"
UNAVAILABLE = "the response store is unavailable"
TOO_LARGE = "the response is larger than the response store keeps for this key"


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A response as answered (`response`), the conversation it ended (`items`: its input items, those of the
    responses it continued included, then its output, in Responses wire items) and the tools it had found."""

    response: JsonObject
    items: list[JsonObject]
    tools: list[str]
    size: int = 0  # its JSON's length in bytes, as read from the store


def _encode(stored: StoredResponse) -> bytes:
    return dump_json({"response": stored.response, "items": stored.items, "tools": stored.tools})


def _decode(raw: bytes) -> StoredResponse:
    found = load_json(raw)
    return StoredResponse(found["response"], found["items"], found["tools"], len(raw))


class ResponseStore:
    """Each response for `ttl` seconds after it was stored. A save that the store cannot take (down, hung, or the
    response larger than its caller's share) is reported, so the answer says `store: false` rather than claim a
    response a later read cannot find; a read of a store that is down is a 503: a continuation must not silently
    start from nothing."""

    def __init__(self, store: Store, ttl_seconds: float) -> None:
        self.store = store
        self.ttl = ttl_seconds

    def available(self) -> bool:
        """False while the store is known to be down: a response can say `store: false` from its start."""
        return self.store.available()

    async def save(self, owner: Identity, stored: StoredResponse, size_hint: int = 0) -> str | None:
        """None when kept, else why not (for the answer's warning). `size_hint`: about how large the conversation
        is (its request bodies), to encode a large one off-loop."""
        if not self.store.available():
            return UNAVAILABLE
        raw: bytes = await in_thread_if_large(size_hint, _encode, stored)
        try:
            kept = await self.store.put(_key(owner, str(stored.response["id"])), raw, self.ttl)
        except StoreUnavailable as exc:
            log.log(unavailable_level(exc), "response %s", exc)
            return UNAVAILABLE
        if not kept:
            log.warning("response not stored: %d bytes, over what the store keeps for its caller", len(raw))
            return TOO_LARGE
        return None

    async def get(self, owner: Identity, response_id: str) -> StoredResponse | None:
        """The stored response when `owner` owns it; None for anyone else (a 404 that tells nothing)."""
        try:
            raw = await self.store.get(_key(owner, response_id))
        except StoreUnavailable as exc:
            raise _unavailable(exc) from None
        if raw is None:
            return None
        found: StoredResponse = await in_thread_if_large(len(raw), _decode, raw)
        return found

    async def delete(self, owner: Identity, response_id: str) -> bool:
        try:
            return await self.store.delete(_key(owner, response_id))
        except StoreUnavailable as exc:
            raise _unavailable(exc) from None

    async def aclose(self) -> None:
        await self.store.aclose()


def _key(owner: Identity, response_id: str) -> Key:
    return Key(NAMESPACE, owner.id, response_id)


def _unavailable(exc: StoreUnavailable) -> GatewayError:
    log.log(unavailable_level(exc), "response %s", exc)
    return GatewayError(503, "The response store is unavailable; try again.", "server_error")


def response_store(
    config: ResponsesStoreConfig, redis_url: str | None, stores: Stores, identities: Identities | None = None
) -> ResponseStore:
    owners = identities.stored_bytes() if identities is not None else None
    store = stores.open(redis_url, config.max_responses, config.max_bytes, config.max_bytes_per_identity, owners)
    return ResponseStore(store, config.ttl_seconds)
