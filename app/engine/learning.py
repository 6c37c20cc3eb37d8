"""Learning from use: the deployment's learned pairs in the store, and each process's view of them for searches.

A pair (query, tool) is learned when a search returned the tool for the query and the model then called it
successfully (app/engine/learning_trail.py sees that). Pairs live in the gateway's one store, so replicas share
them: one value per identity (its pairs, bounded in bytes, the least recently used out first), an index of the
identities with pairs (the deployment's bound: the identity written longest ago goes first), and a version that
every write bumps. A process reads the version before a search and reloads the pairs only when it moved.

What is kept of a query is its text, redacted, and its vector; the admin API lists and clears pairs.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.common.offload import off_loop
from app.common.redaction import redact
from app.config import Config, LearningConfig
from app.discovery.encoder import Array
from app.discovery.learned import LearnedIndex, LearnedPair, LearnedView, LearningParams, remembered
from app.store import Key, Store, Stores, StoreUnavailable, dump_json, load_json, unavailable_level

log = logging.getLogger("toolsift.learning")
NAMESPACE = "learned"
DEPLOYMENT = ""  # the owner of the index and the version: no identity's id is empty
INDEX, VERSION, PAIRS = Key(NAMESPACE, DEPLOYMENT, "index"), Key(NAMESPACE, DEPLOYMENT, "version"), "pairs"
MAX_QUERY_CHARS = 300  # what is kept of a query: a search's queries are short; a task's first words say enough
SAME_NEED = 0.95  # a new pair this near a kept one of the same tool is that one used again


def learning_for(config: Config, stores: Stores) -> Learning:
    """The gateway's learning, in the gateway's store (shared by replicas when it is Redis): an identity holds its
    pairs and its sessions' pending searches; the deployment holds the index and the version."""
    settings = config.tool_discovery.learning
    owner = 2 * settings.max_bytes_per_identity  # its pairs, and what its sessions' searches returned meanwhile
    store = stores.open(config.store.redis_url, 100_000, settings.max_bytes + owner, owner, {DEPLOYMENT: owner})
    return Learning(store, settings)


def kept_query(query: str) -> str:
    """A query as the store keeps it, in a pair or waiting for its call: redacted and cut."""
    return redact(query)[:MAX_QUERY_CHARS]


def params_of(config: LearningConfig) -> LearningParams:
    return LearningParams(config.threshold, config.max_lift, config.ramp, config.half_life_days, config.quorum)


@dataclass(frozen=True)
class Taught:
    """One successful use to learn: `identity`'s `query` (with its vector, when it had one) returned `tool`."""

    identity: str
    query: str
    tool: str
    vector: Array | None


class Learning:
    def __init__(self, store: Store, config: LearningConfig, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.config = config
        self.params = params_of(config)
        self.clock = clock
        self._version: bytes | None = None
        self._loaded: dict[str, tuple[float, list[LearnedPair]]] = {}  # per identity: when written, its pairs
        self._index = LearnedIndex([], self.params, clock())
        self._reading = asyncio.Lock()
        self._writing = asyncio.Lock()

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def status(self) -> dict[str, object]:
        """For /healthz: on or off, and the pairs and identities this process last read."""
        return {"enabled": self.enabled, "pairs": len(self._index), "identities": len(self._loaded)}

    async def view(self, caller: str) -> LearnedView | None:
        """What `caller`'s next search reads: the pairs as of the store's current version (reloaded when another
        process, or this one, wrote since); None with learning off or nothing learned."""
        if not self.enabled:
            return None
        try:
            await self._refresh()
        except StoreUnavailable as exc:  # the last pairs read still serve
            log.log(unavailable_level(exc), "learning: the store is unavailable (%s); using the pairs last read", exc)
        return LearnedView(self._index, caller) if len(self._index) else None

    async def _refresh(self) -> None:
        version = await self.store.get(VERSION)
        if version == self._version:
            return
        async with self._reading:
            if version == self._version:
                return
            index = await self._index_entries()
            loaded = {}
            for identity, (_, written) in index.items():  # only what changed since the last read is read again
                known = self._loaded.get(identity)
                loaded[identity] = (
                    known if known is not None and known[0] == written else (written, await self._pairs(identity))
                )
            pairs = [pair for _, kept in loaded.values() for pair in kept]
            self._index = await off_loop(LearnedIndex, pairs, self.params, self.clock())
            self._loaded, self._version = loaded, version

    async def learn(self, taught: list[Taught]) -> None:
        """Keep each use: a pair near a kept one of the same tool counts as that one again."""
        if not self.enabled or not taught:
            return
        try:
            async with self._writing:
                for identity in dict.fromkeys(each.identity for each in taught):
                    await self._learn(identity, [each for each in taught if each.identity == identity])
                await self.store.incr(VERSION)
        except StoreUnavailable as exc:
            lost = len(taught)
            log.log(unavailable_level(exc), "learning: the store is unavailable (%s); %d uses not kept", exc, lost)

    async def _learn(self, identity: str, taught: list[Taught]) -> None:
        now = self.clock()
        pairs = remembered(await self._pairs(identity), now, self.params)
        for each in taught:
            query = kept_query(each.query)
            vector = _unit(each.vector)
            same = next((at for at, pair in enumerate(pairs) if _same(pair, each.tool, query, vector)), None)
            if same is not None:
                kept = pairs.pop(same)
                pairs.append(LearnedPair(kept.query, kept.tool, identity, kept.vector, kept.uses + 1, now))
            else:
                pairs.append(LearnedPair(query, each.tool, identity, vector, 1, now))
        raw = _bounded(pairs, self.config.max_bytes_per_identity)
        await self.store.put(Key(NAMESPACE, identity, PAIRS), raw)
        await self._indexed(identity, len(raw), now)
        learned = ", ".join(f"{each.tool} for {redact(each.query)[:80]!r}" for each in taught)
        log.debug("learning: %s learned %s", identity, learned)

    async def _indexed(self, identity: str, size: int, now: float) -> None:
        """Note `identity`'s pairs in the index; past the deployment's bound, the identities written longest ago
        lose theirs."""
        index = await self._index_entries()
        index[identity] = (size, now)
        while sum(size for size, _ in index.values()) > self.config.max_bytes and len(index) > 1:
            oldest = min((entry for entry in index if entry != identity), key=lambda entry: index[entry][1])
            del index[oldest]
            await self.store.delete(Key(NAMESPACE, oldest, PAIRS))
        await self.store.put(INDEX, dump_json({name: list(entry) for name, entry in index.items()}))

    async def _index_entries(self) -> dict[str, tuple[int, float]]:
        raw = await self.store.get(INDEX)
        try:
            found = load_json(raw) if raw else {}
            return {str(name): (int(entry[0]), float(entry[1])) for name, entry in found.items()}
        except (ValueError, TypeError, AttributeError, IndexError) as exc:  # another version's: start over
            log.warning("learning: the index of learned pairs could not be read (%s); it starts over", exc)
            return {}

    async def _identities(self) -> list[str]:
        return list(await self._index_entries())

    async def _pairs(self, identity: str) -> list[LearnedPair]:
        raw = await self.store.get(Key(NAMESPACE, identity, PAIRS))
        return _decoded(identity, raw) if raw else []

    # -- the operator's ---------------------------------------------------------------------------------
    async def listed(self, tool: str | None = None, identity: str | None = None) -> list[LearnedPair]:
        """The kept pairs, most recently used first: all, or one tool's, or one identity's."""
        identities = [identity] if identity is not None else await self._identities()
        pairs = [pair for name in identities for pair in await self._pairs(name)]
        chosen = [pair for pair in reversed(pairs) if tool is None or pair.tool == tool]  # kept oldest first
        return sorted(chosen, key=lambda pair: -pair.last_used)

    async def clear(self, tool: str | None = None, identity: str | None = None) -> int:
        """Forget pairs: all, one tool's, one identity's, or one identity's of one tool. Returns how many."""
        async with self._writing:
            index = await self._index_entries()
            cleared = 0
            for name in [identity] if identity is not None else list(index):
                pairs = await self._pairs(name)
                kept = [pair for pair in pairs if tool is not None and pair.tool != tool]
                cleared += len(pairs) - len(kept)
                if kept:
                    raw = _bounded(kept, self.config.max_bytes_per_identity)
                    await self.store.put(Key(NAMESPACE, name, PAIRS), raw)
                    index[name] = (len(raw), self.clock())
                else:
                    await self.store.delete(Key(NAMESPACE, name, PAIRS))
                    index.pop(name, None)
            await self.store.put(INDEX, dump_json({name: list(entry) for name, entry in index.items()}))
            await self.store.incr(VERSION)
        return cleared


def _same(pair: LearnedPair, tool: str, query: str, vector: Array | None) -> bool:
    if pair.tool != tool:
        return False
    if pair.vector is not None and vector is not None:
        return float(pair.vector @ vector) >= SAME_NEED
    return pair.query.casefold() == query.casefold()


def _unit(vector: Array | None) -> Array | None:
    if vector is None:
        return None
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else None


def encode_vector(vector: Array | None) -> str | None:
    """A unit vector as kept: float16, base64 (768 bytes of MiniLM's 384 dimensions as 1,024 characters)."""
    return base64.b64encode(vector.astype(np.float16).tobytes()).decode() if vector is not None else None


def decode_vector(value: object) -> Array | None:
    if not isinstance(value, str) or not value:
        return None
    return np.frombuffer(base64.b64decode(value), dtype=np.float16).astype(np.float32)


def _encoded(pair: LearnedPair) -> list[object]:
    # To the millisecond, rounded down: a later use never sorts before an earlier one.
    return [pair.query, pair.tool, pair.uses, math.floor(pair.last_used * 1000) / 1000, encode_vector(pair.vector)]


def _bounded(pairs: list[LearnedPair], limit: int) -> bytes:
    """The pairs as kept, the least recently used dropped until they fit in `limit` bytes."""
    ordered = sorted(pairs, key=lambda pair: pair.last_used)
    rows = [_encoded(pair) for pair in ordered]
    raw = dump_json(rows)
    drop = 0
    while len(raw) > limit and drop < len(rows):
        drop += max(1, (len(raw) - limit) // max(1, len(raw) // len(rows)))  # about as many rows as are over
        raw = dump_json(rows[drop:])
    return raw


def _decoded(identity: str, raw: bytes) -> list[LearnedPair]:
    pairs = []
    try:
        for query, tool, uses, last_used, vector in load_json(raw):
            decoded = decode_vector(vector)
            pairs.append(LearnedPair(str(query), str(tool), identity, decoded, int(uses), float(last_used)))
    except (ValueError, TypeError) as exc:  # a value another version wrote: start over rather than fail searches
        log.warning("learning: %s's kept pairs could not be read (%s); they are ignored", identity, exc)
        return []
    return pairs
