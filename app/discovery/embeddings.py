"""Embedding backends and the on-disk vector cache.

A backend turns texts into unit vectors; it is called from a worker thread, never on the event loop. Two kinds:
a local BERT-family model (`encoder.py`), or any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama,
vLLM, Text Embeddings Inference), batched and retried. Vectors are cached on disk by a hash of the backend's
identity and the text, so a restart with an unchanged catalog embeds nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
import numpy as np

from app.discovery.encoder import Array, BertEncoder

log = logging.getLogger("toolsift.semantic")
# Queries share encoder rows of up to this many tokens (each attending only to itself): a call of several short
# queries costs one pass over their tokens rather than one pass each, padded to the longest.
QUERY_ROW_TOKENS = 256


class EmbeddingError(Exception):
    """The backend failed or answered something that is not one vector per text."""


class Embedder(Protocol):
    key: str  # the backend's identity in cache keys: another model never reuses these vectors

    def embed(self, texts: Sequence[str]) -> Array: ...

    def embed_queries(self, texts: Sequence[str]) -> Array: ...


class LocalEmbedder:
    """Tool texts are read up to `tool_tokens` (64 by default: as good on the benchmark data as 128, and 30%
    less to compute, since a tool's first sentences say what it does); queries up to `query_tokens`."""

    def __init__(self, directory: Path, query_tokens: int = 128, tool_tokens: int = 64) -> None:
        self.encoder = BertEncoder(directory, max(query_tokens, tool_tokens))
        self.query_tokens, self.tool_tokens = query_tokens, tool_tokens
        weights = directory / "model.safetensors"
        stamp = hashlib.sha256(f"{directory.name}:{weights.stat().st_size}:{tool_tokens}".encode()).hexdigest()[:16]
        self.key = f"local:{stamp}"

    def embed(self, texts: Sequence[str]) -> Array:
        return self.encoder.encode(texts, max_tokens=self.tool_tokens)

    def embed_queries(self, texts: Sequence[str]) -> Array:
        return self.encoder.encode(texts, max_tokens=self.query_tokens, pack=QUERY_ROW_TOKENS)


class EndpointEmbedder:
    """`POST {base_url}/embeddings` in batches; connection errors, 429 and 5xx are retried with backoff."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        batch_size: int = 64,
        max_retries: int = 3,
        timeout: float = 30.0,
        retry_base_delay: float = 0.5,
    ) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=timeout, headers=headers)
        self.key = "endpoint:" + hashlib.sha256(f"{self.url}\n{model}".encode()).hexdigest()[:16]

    def embed(self, texts: Sequence[str]) -> Array:
        rows = [
            self._batch(list(texts[start : start + self.batch_size])) for start in range(0, len(texts), self.batch_size)
        ]
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.concatenate(rows).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        result: Array = vectors / np.maximum(norms, 1e-12)
        return result

    def embed_queries(self, texts: Sequence[str]) -> Array:
        return self.embed(texts)

    def _batch(self, texts: list[str]) -> Array:
        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.post(self.url, json={"model": self.model, "input": texts})
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}"
            else:
                if response.status_code == 200:
                    return _vectors(response, len(texts))
                problem = f"HTTP {response.status_code}"
                if response.status_code != 429 and response.status_code < 500:
                    raise EmbeddingError(f"embeddings endpoint answered {problem}")
            if attempt < self.max_retries:
                time.sleep(random.uniform(0, self.retry_base_delay * 2**attempt))
        raise EmbeddingError(f"embeddings endpoint failed after {self.max_retries + 1} attempts: {problem}")


def _vectors(response: httpx.Response, count: int) -> Array:
    try:
        data: Any = response.json()["data"]
        ordered = sorted(data, key=lambda item: int(item["index"]))
        vectors = np.array([item["embedding"] for item in ordered], dtype=np.float32)
    except (ValueError, KeyError, TypeError) as exc:
        raise EmbeddingError(f"embeddings endpoint answered an unexpected shape ({type(exc).__name__})") from exc
    if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] == 0 or not np.isfinite(vectors).all():
        got = vectors.shape[0] if vectors.ndim else 0
        raise EmbeddingError(f"embeddings endpoint answered {got} vectors of the wrong shape for {count} texts")
    return vectors


def text_key(backend_key: str, text: str) -> str:
    return hashlib.sha256(f"{backend_key}\n{text}".encode()).hexdigest()


class VectorCache:
    """Vectors by text hash, for one backend, in one `.npz` file: loaded once, rewritten atomically."""

    def __init__(self, directory: Path | None, backend_key: str) -> None:
        name = backend_key.replace(":", "-")
        self.path = directory / f"{name}.npz" if directory is not None else None
        self.vectors: dict[str, Array] = {}
        if self.path is not None and self.path.is_file():
            try:
                with np.load(self.path) as stored:
                    keys, matrix = stored["keys"], stored["vectors"]
                self.vectors = {str(key): matrix[row] for row, key in enumerate(keys)}
            except Exception as exc:  # a damaged cache costs one re-embedding, never a failed start
                log.warning("semantic: ignoring unreadable embedding cache %s: %s", self.path, exc)

    def save(self) -> None:
        if self.path is None or not self.vectors:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = np.array(list(self.vectors))
            matrix = np.stack(list(self.vectors.values()))
            with tempfile.NamedTemporaryFile(dir=self.path.parent, suffix=".npz", delete=False) as out:
                np.savez(out, keys=keys, vectors=matrix)
            os.replace(out.name, self.path)
        except OSError as exc:
            log.warning("semantic: cannot write the embedding cache %s: %s", self.path, exc)
