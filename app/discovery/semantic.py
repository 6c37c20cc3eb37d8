"""Semantic search beside the keyword index: tool vectors computed in the background, query vectors on demand.

The gateway never waits for embeddings: it serves keyword search from the start and switches a catalog to
hybrid search once every tool of it has a vector. Tool vectors are computed once per text (cached on disk by
backend and text), so a restart embeds nothing and a catalog change embeds only what changed. Encoding runs in
worker threads; the event loop only looks vectors up and does one matrix-vector product per query.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from cachetools import LRUCache

from app.common.home import toolsift_home
from app.common.offload import Lane
from app.core.catalog import ToolEntry
from app.discovery.embeddings import (
    Embedder,
    EmbeddingError,
    EndpointEmbedder,
    LocalEmbedder,
    VectorCache,
    text_key,
)
from app.discovery.encode_budget import EncodeBudget, query_cost
from app.discovery.encoder import Array, ModelLoadError
from app.discovery.hybrid import EnrichedVectors, QueryVectors, ServerMeans, sentences, server_means
from app.discovery.models import find_model
from app.discovery.params import DEFAULT_PARAMS, MAX_QUERY_CHARS, SearchParams

if TYPE_CHECKING:
    from app.config import SemanticConfig
    from app.discovery.index import ToolIndex

log = logging.getLogger("toolsift.semantic")
_IDENTIFIER = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.]+")
QUERY_CACHE_SIZE = 1024
MAX_PARAMETERS = 32  # parameters read for the text of a tool without a description (its text is 300 characters)
State = Literal["off", "loading", "ready", "unavailable"]


def fusion_params(settings: SemanticConfig) -> SearchParams:
    """The measured defaults with the config's fusion knobs applied."""
    return replace(
        DEFAULT_PARAMS,
        semantic_weight_short=settings.weight_short,
        semantic_weight_long=settings.weight_long,
        short_query_words=settings.short_query_words,
        long_query_words=settings.long_query_words,
        weak_match_floor=settings.weak_match_floor,
        lexical_confidence=settings.lexical_confidence,
        sentence_weight=settings.sentence_weight,
        server_meaning_lift=settings.server_meaning_lift,
        enrichment_meaning=settings.enrichment_weight,
    )


def tool_text(entry: ToolEntry) -> str:
    """What a tool's vector is computed from: its name as words, then its description (measured against adding
    the server's name or the parameters: this reads best for short queries and as well for long ones). A tool
    without a description is read as its name, its server's name and its parameters: its name alone is two or three
    words (measured on RapidAPI tasks: one call of sub-queries 0.806 -> 0.814 with this, whole tasks level; the
    server's description as well read worse for short queries)."""
    name = _words(entry.original_name)
    if entry.description.strip():
        return f"{name}: {entry.description.strip()}"
    details = [_words(entry.server)] if entry.server else []
    properties = entry.parameters.get("properties")
    if isinstance(properties, dict) and properties:
        details.append("takes " + _parameters(properties))
    return f"{name}: {'; '.join(details)}" if details else name


def _words(identifier: str) -> str:
    return " ".join(_IDENTIFIER.sub(" ", identifier).split()).lower()


def _parameters(properties: dict[str, Any], limit: int = 300) -> str:
    """Parameter names as words, each with its description: what a tool takes says what it does."""
    parts: list[str] = []
    for name, spec in list(properties.items())[:MAX_PARAMETERS]:
        description = spec.get("description") if isinstance(spec, dict) else None
        text = description.strip() if isinstance(description, str) else ""
        parts.append(_words(str(name)) + (f" ({text})" if text else ""))
    return ", ".join(parts)[:limit]


class SemanticSearch:
    """One per process: the backend, the vector cache, and each index's matrix once it is complete."""

    def __init__(self, settings: SemanticConfig, base_dir: Path | None = None) -> None:
        self.settings = settings
        self.base_dir = base_dir
        self.state: State = "off" if settings.enabled is False else "loading"
        self.reason = ""
        self.backend: Embedder | None = None
        self.cache: VectorCache | None = None
        self.encoder_calls = 0  # tool texts sent to the backend (queries not counted), for tests and benches
        self._lock = threading.Lock()
        self.params = fusion_params(settings)
        self._queries: LRUCache[str, QueryVectors] = LRUCache(QUERY_CACHE_SIZE)  # read here, written in threads
        self._matrices: weakref.WeakKeyDictionary[ToolIndex, Array] = weakref.WeakKeyDictionary()
        self._means: weakref.WeakKeyDictionary[ToolIndex, ServerMeans] = weakref.WeakKeyDictionary()
        self._keys: weakref.WeakKeyDictionary[ToolIndex, list[str]] = weakref.WeakKeyDictionary()
        self._enriched: weakref.WeakKeyDictionary[ToolIndex, EnrichedVectors | None] = weakref.WeakKeyDictionary()
        self._enriched_keys: weakref.WeakKeyDictionary[ToolIndex, list[str]] = weakref.WeakKeyDictionary()
        self._pending: dict[str, str] = {}
        self._announced = False  # "semantic search active" logged
        self._worker: asyncio.Task[None] | None = None
        # Queries are encoded one batch at a time, in the worker pool: however many requests search at once,
        # query encoding takes at most one core, and the other is left to serving.
        self._encoding = Lane(1)
        self._loading: asyncio.Task[None] | None = None

    # -- set-up ------------------------------------------------------------------------------------------
    def load(self) -> bool:
        """Find and load the backend (blocking: seconds for a local model). False leaves search lexical."""
        if self.state == "off":
            return False
        if self.backend is not None:
            return True
        settings = self.settings
        try:
            if settings.endpoint is not None:
                endpoint = settings.endpoint
                backend: Embedder = EndpointEmbedder(
                    endpoint.base_url, endpoint.model, endpoint.api_key, endpoint.batch_size, endpoint.max_retries
                )
                source = f"embeddings endpoint {endpoint.base_url} ({endpoint.model})"
            else:
                directory = find_model(settings.model, self.base_dir)
                if directory is None:
                    return self._unavailable(
                        f"model {settings.model!r} not found (run `toolsift models pull {settings.model}` or set "
                        "tool_discovery.semantic.model to a local directory)"
                    )
                backend = LocalEmbedder(directory, settings.max_tokens, settings.tool_max_tokens)
                source = f"model {settings.model}"
        except (ModelLoadError, OSError) as exc:
            return self._unavailable(str(exc))
        cache_dir = Path(settings.cache_dir).expanduser() if settings.cache_dir else toolsift_home() / "embeddings"
        self.cache = VectorCache(cache_dir, backend.key)
        self.backend, self.state = backend, "ready"
        log.info("semantic search on: %s; %d cached tool vectors", source, len(self.cache.vectors))
        return True

    def _unavailable(self, reason: str) -> bool:
        self.state, self.reason = "unavailable", reason
        level = logging.WARNING if self.settings.enabled is True else logging.INFO
        log.log(level, "semantic search off, keyword search only: %s", reason)
        return False

    async def start(self) -> None:
        """Load the backend in a thread and return at once: requests are served lexically meanwhile."""
        if self.state == "loading" and self._loading is None:
            self._loading = asyncio.create_task(self._load_then_embed())

    async def _load_then_embed(self) -> None:
        if await asyncio.to_thread(self.load):
            self._wake()

    async def aclose(self) -> None:
        for task in (self._loading, self._worker):
            if task is not None:
                task.cancel()

    def status(self) -> dict[str, object]:
        """For /healthz: whether search is hybrid yet, what is still being embedded, and why it is not (yet)."""
        busy = self.state == "loading" or bool(self._pending) or (self._worker is not None and not self._worker.done())
        mode = {"off": "keywords", "unavailable": "keywords"}.get(self.state, "embedding" if busy else "hybrid")
        found: dict[str, object] = {
            "mode": mode,
            "tool_vectors": len(self.cache_vectors),
            "pending": len(self._pending),
        }
        reason = self.reason or self._waiting_for() if mode != "hybrid" else ""
        if reason:
            found["reason"] = reason
        return found

    def _waiting_for(self) -> str:
        """Why search is by keywords only for now: what meaning search is still waiting for."""
        if self.state == "off":
            return "tool_discovery.semantic.enabled is false"
        if self.state == "loading":
            return "the search model is loading; meaning search starts once the tools are embedded"
        return f"{len(self._pending)} tools still to embed; meaning search starts once they are"

    # -- tool vectors -------------------------------------------------------------------------------------
    def track(self, entries: Iterable[ToolEntry], texts: Iterable[str] = ()) -> None:
        """Make sure these tools (and these other `texts`: their enrichments) get vectors: queued for the
        background worker, nothing computed here."""
        if self.state == "off" or self.state == "unavailable":
            return
        for text in [*(tool_text(entry) for entry in entries), *texts]:
            key = self._key(text)
            if key is None or key not in self.cache_vectors:
                self._pending[text] = text
        if self.backend is not None:
            self._wake()
            self._announce()

    @property
    def cache_vectors(self) -> dict[str, Array]:
        return self.cache.vectors if self.cache is not None else {}

    def _key(self, text: str) -> str | None:
        return text_key(self.backend.key, text) if self.backend is not None else None

    def _wake(self) -> None:
        """Start the background worker; outside an event loop (a command, a bench) `embed_now` does the work."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._pending and (self._worker is None or self._worker.done()):
            self._worker = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            texts = list(self._pending)[:256]
            try:
                await asyncio.to_thread(self.embed_now, texts)
            except EmbeddingError as exc:
                log.warning("semantic: embedding %d tools failed, keyword search meanwhile: %s", len(texts), exc)
                return
            finally:
                for text in texts:
                    self._pending.pop(text, None)
        if self.cache is not None:
            await asyncio.to_thread(self.cache.save)
        self._announce()

    def _announce(self) -> None:
        """Log the moment search stops being keyword-only: every tracked tool has its vector. Once; later tool
        changes are embedded quietly."""
        if self._announced or self.backend is None or self._pending or not self.cache_vectors:
            return
        try:
            current = asyncio.current_task()
        except RuntimeError:  # a worker thread (an index being built): the worker's state decides
            current = None
        if self._worker is not None and not self._worker.done() and self._worker is not current:
            return
        self._announced = True
        log.info("semantic search active: search is by keywords and meaning from now on")

    def embed_now(self, texts: Sequence[str]) -> None:
        """Compute the missing vectors of `texts` (blocking; a worker thread, the CLI or a bench)."""
        if self.backend is None or self.cache is None:
            return
        missing = list(
            dict.fromkeys(text for text in texts if text_key(self.backend.key, text) not in self.cache.vectors)
        )
        if not missing:
            return
        vectors = self.backend.embed(missing)
        if vectors.shape[0] != len(missing):
            raise EmbeddingError(f"{vectors.shape[0]} vectors for {len(missing)} texts")
        with self._lock:
            self.encoder_calls += len(missing)
            for text, vector in zip(missing, vectors, strict=True):
                self.cache.vectors[text_key(self.backend.key, text)] = vector

    def ensure_now(self, entries: Iterable[ToolEntry], texts: Iterable[str] = ()) -> None:
        """Load the backend and embed `entries` (and these other `texts`: their enrichments) right away, then
        save: for commands that answer once."""
        if self.load():
            self.embed_now([*(tool_text(entry) for entry in entries), *texts])
            if self.cache is not None:
                self.cache.save()

    def matrix(self, index: ToolIndex) -> Array | None:
        """The index's tool vectors as one matrix, or None while any is missing (the index stays lexical)."""
        found = self._matrices.get(index)
        if found is not None or self.backend is None:
            return found
        vectors = self.cache_vectors
        keys = self._keys.get(index)
        if keys is None:  # hashed once per index, not in every search while its tools are still being embedded
            keys = self._keys[index] = [text_key(self.backend.key, tool_text(entry)) for entry in index.entries]
        if not all(key in vectors for key in keys):
            return None
        matrix = np.stack([vectors[key] for key in keys]) if keys else np.zeros((0, 1), dtype=np.float32)
        self._means[index] = server_means(index.entries, matrix)
        self._matrices[index] = matrix
        return matrix

    def enriched(self, index: ToolIndex) -> EnrichedVectors | None:
        """The vectors of the index's tools' enrichments, once every one of them is computed (None until then,
        and for an index without enrichment: its tools' own vectors rank alone)."""
        if index in self._enriched or self.backend is None:
            return self._enriched.get(index)
        keys = self._enriched_keys.get(index)
        if keys is None:
            keys = self._enriched_keys[index] = [
                text_key(self.backend.key, found.text) for found in index.enriched if found is not None
            ]
        vectors = self.cache_vectors
        if not keys:
            self._enriched[index] = None
        elif all(key in vectors for key in keys):
            owner = [position for position, found in enumerate(index.enriched) if found is not None]
            rows = np.stack([vectors[key] for key in keys])
            self._enriched[index] = EnrichedVectors(rows, np.array(owner, dtype=np.int64))
        return self._enriched.get(index)

    def means(self, index: ToolIndex) -> ServerMeans | None:
        """The index's servers' mean tool vectors, once its matrix is complete."""
        return self._means.get(index) if self.matrix(index) is not None else None

    # -- query vectors ----------------------------------------------------------------------------------
    def query_vectors(self, text: str) -> QueryVectors | None:
        with self._lock:  # a read marks the query recent: it writes too
            return self._queries.get(text[:MAX_QUERY_CHARS])

    def query_vector(self, text: str) -> Array | None:
        found = self.query_vectors(text)
        return found.whole if found is not None else None

    def prepare_now(self, text: str) -> None:
        """Compute `text`'s vectors unless cached (blocking; call through `prepare` on the event loop)."""
        self.prepare_many_now([text])

    def prepare_many_now(self, texts: Sequence[str], budget: EncodeBudget | None = None) -> None:
        """Compute the vectors of the `texts` not cached: each whole text, and for a task of several sentences each
        sentence's. The wholes are one batch and the sentences another (so short sentences are not padded to a
        whole task's length): a call of four short queries costs one encoder pass, not four. With a `budget`, a
        text whose tokens no longer fit in it is not encoded, and is noted there as ranked by keywords alone."""
        if self.backend is None:
            return
        wanted = [text for text in dict.fromkeys(text[:MAX_QUERY_CHARS] for text in texts) if text.strip()]
        wanted = [text for text in wanted if text not in self._queries]
        if budget is not None:
            split = self.params.sentence_weight > 0
            fits = [budget.take(query_cost(self.backend, text, split)) for text in wanted]
            budget.over.extend(text for text, fit in zip(wanted, fits, strict=True) if not fit)
            wanted = [text for text, fit in zip(wanted, fits, strict=True) if fit]
        if not wanted:
            return
        parts = [sentences(text) if self.params.sentence_weight > 0 else [] for text in wanted]
        flat = [sentence for found in parts for sentence in found]
        whole = self.backend.embed_queries(wanted)
        each = self.backend.embed_queries(flat) if flat else whole[:0]
        if whole.shape[0] != len(wanted) or each.shape[0] != len(flat):
            raise EmbeddingError(f"{whole.shape[0] + each.shape[0]} vectors for {len(wanted) + len(flat)} texts")
        start = 0
        with self._lock:
            for text, found, vector in zip(wanted, parts, whole, strict=True):
                vectors = each[start : start + len(found)]
                self._queries[text] = QueryVectors(vector, tuple(zip(found, vectors, strict=True)))
                start += len(found)

    async def prepare(self, text: str | None, budget: EncodeBudget | None = None) -> None:
        """Have `text`'s vector ready for the next search, computed in a thread; failures leave it lexical."""
        await self.prepare_many([text] if text else [], budget)

    async def prepare_many(self, texts: Sequence[str], budget: EncodeBudget | None = None) -> None:
        """Have the vectors of `texts` ready for the next searches, computed in one batch in the worker pool, within
        the request's `budget`; failures, the texts past the budget and a wait for the encoder longer than
        `semantic.query_wait_seconds` leave those searches lexical (noted in the budget)."""
        missing = [text for text in texts if text and self.query_vector(text) is None]
        if self.backend is None or not missing:
            return
        try:
            await asyncio.wait_for(
                self._encoding.run(self.prepare_many_now, missing, budget), self.settings.query_wait_seconds
            )
        except TimeoutError:
            log.warning("semantic: the query encoder was busy for %ss, keyword search for this call's queries",
                        self.settings.query_wait_seconds)  # fmt: skip
            if budget is not None:
                budget.busy.extend(text for text in missing if self.query_vector(text) is None)
        except EmbeddingError as exc:
            log.warning("semantic: query embedding failed, keyword search for these queries: %s", exc)
