"""A sentence encoder for BERT-family models in numpy: no torch at run time.

Sentence-transformer models such as all-MiniLM-L6-v2 are a BERT encoder, mean pooling and L2 normalisation
(all-mpnet-base-v2 the same on MPNet, a BERT whose attention also weighs the relative distance of two tokens);
for 6 layers of 384 dimensions that is a handful of matrix products, which numpy's BLAS runs as fast as any
runtime on a CPU. Weights come from `model.safetensors` and the tokenizer from `tokenizer.json` (Hugging Face's
`tokenizers`, the same Rust tokenizer the reference uses), so any model in the standard layout loads.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# The tokenizer's own thread pool buys nothing for a few texts at a time, and it warns (to stderr) whenever the
# gateway later forks to start a stdio MCP server.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
Array = np.ndarray[Any, np.dtype[np.float32]]
# Where each family keeps an attention block's weights, under `encoder.layer.N.attention.`.
_BERT_NAMES = {"q": "self.query", "k": "self.key", "v": "self.value", "out": "output.dense", "norm": "output.LayerNorm"}
_MPNET_NAMES = {"q": "attn.q", "k": "attn.k", "v": "attn.v", "out": "attn.o", "norm": "LayerNorm"}
_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "mpnet")


class ModelLoadError(Exception):
    """The model directory is missing a file, or holds something this encoder cannot run."""


@dataclass(frozen=True)
class _Layer:
    qkv: Array  # (hidden, 3 * hidden): query, key and value projections in one product
    qkv_bias: Array
    out: Array
    out_bias: Array
    norm1: tuple[Array, Array]
    up: Array
    up_bias: Array
    down: Array
    down_bias: Array
    norm2: tuple[Array, Array]


class BertEncoder:
    """all-MiniLM-style encoder: `encode(texts)` gives unit vectors, one row per text."""

    def __init__(self, directory: Path, max_tokens: int = 256) -> None:
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are dependencies
            raise ModelLoadError(f"missing package: {exc.name}") from exc
        weights_path, tokenizer_path = directory / "model.safetensors", directory / "tokenizer.json"
        for path in (weights_path, tokenizer_path, directory / "config.json"):
            if not path.is_file():
                raise ModelLoadError(f"{path.name} not found in {directory}")
        try:
            config = json.loads((directory / "config.json").read_text())
            raw = load_file(str(weights_path))
            self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:
            raise ModelLoadError(f"cannot read the model in {directory}: {exc}") from exc
        model_type = config.get("model_type", "bert")
        if model_type not in _MODEL_TYPES or config.get("hidden_act", "gelu") not in ("gelu", "gelu_new"):
            raise ModelLoadError(f"unsupported model type in {directory}: {model_type}")
        head = next((f"{name}." for name in _MODEL_TYPES if f"{name}.embeddings.word_embeddings.weight" in raw), "")
        try:
            self._load(raw, head, config)
        except KeyError as exc:
            raise ModelLoadError(f"{directory}: weight {exc} not found; not a BERT-family encoder") from exc
        self.max_tokens = min(max_tokens, self.positions.shape[0])
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.no_padding()
        self.dimensions = int(self.word.shape[1])

    def _load(self, raw: dict[str, Any], prefix: str, config: dict[str, Any]) -> None:
        def get(name: str) -> Array:
            return np.ascontiguousarray(raw[prefix + name], dtype=np.float32)

        def norm(name: str) -> tuple[Array, Array]:
            return get(f"{name}.weight"), get(f"{name}.bias")

        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.heads = int(config["num_attention_heads"])
        self.word = get("embeddings.word_embeddings.weight")
        # RoBERTa-style models (RoBERTa, XLM-R, MPNet) number positions from the padding id + 1, BERT from 0.
        first = int(config.get("pad_token_id", 1)) + 1 if config.get("model_type", "bert") != "bert" else 0
        self.positions = get("embeddings.position_embeddings.weight")[first:]
        mpnet = config.get("model_type") == "mpnet"
        # MPNet has no token types; it adds a learned bias by relative distance to every attention score instead.
        self.token_type = np.zeros_like(self.word[0]) if mpnet else get("embeddings.token_type_embeddings.weight")[0]
        self.relative_bias = get("encoder.relative_attention_bias.weight") if mpnet else None
        self.embedding_norm = norm("embeddings.LayerNorm")
        self.layers: list[_Layer] = []
        names = _MPNET_NAMES if mpnet else _BERT_NAMES
        for number in range(int(config["num_hidden_layers"])):
            base = f"encoder.layer.{number}."
            attention = base + "attention."
            qkv = [f"{attention}{names[part]}" for part in ("q", "k", "v")]
            self.layers.append(
                _Layer(
                    qkv=np.ascontiguousarray(np.concatenate([get(f"{name}.weight") for name in qkv]).T),
                    qkv_bias=np.concatenate([get(f"{name}.bias") for name in qkv]),
                    out=np.ascontiguousarray(get(f"{attention}{names['out']}.weight").T),
                    out_bias=get(f"{attention}{names['out']}.bias"),
                    norm1=norm(f"{attention}{names['norm']}"),
                    up=np.ascontiguousarray(get(f"{base}intermediate.dense.weight").T),
                    up_bias=get(f"{base}intermediate.dense.bias"),
                    down=np.ascontiguousarray(get(f"{base}output.dense.weight").T),
                    down_bias=get(f"{base}output.dense.bias"),
                    norm2=norm(f"{base}output.LayerNorm"),
                )
            )

    def _relative_bias(self, length: int) -> Array:
        assert self.relative_bias is not None
        buckets = _relative_buckets(length, self.relative_bias.shape[0])
        found: Array = np.ascontiguousarray(self.relative_bias[buckets].transpose(2, 0, 1))[None]  # (1, heads, q, k)
        return found

    def token_count(self, text: str) -> int:
        return len(self.tokenizer.encode(text).ids)

    def encode(self, texts: Sequence[str], batch_size: int = 32, max_tokens: int | None = None, pack: int = 0) -> Array:
        """Unit vectors for `texts`, each read up to `max_tokens` (at most the model's limit); texts are batched
        by length so padding costs little. With `pack`, short texts also share a row of up to `pack` tokens, each
        attending only to itself: a few short queries then cost one pass of their tokens, with no padding."""
        result = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return result
        limit = min(max_tokens or self.max_tokens, self.max_tokens)
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]
        ids = [tokens if len(tokens) <= limit else [*tokens[: limit - 1], tokens[-1]] for tokens in ids]  # keep [SEP]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        rows: list[list[int]] = []  # text numbers per row
        for index in order:
            if rows and pack and sum(len(ids[i]) for i in rows[-1]) + len(ids[index]) <= pack:
                rows[-1].append(index)
            else:
                rows.append([index])
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            result[[index for row in chunk for index in row]] = self._forward([[ids[i] for i in row] for row in chunk])
        return result

    def _forward(self, rows: list[list[list[int]]]) -> Array:
        """One unit vector per text of `rows`, in order: each row holds one text or several side by side, and a
        token attends only to the tokens of its own text, at positions counted from its text's start."""
        length = max(sum(len(tokens) for tokens in row) for row in rows)
        count = sum(len(row) for row in rows)
        ids = np.zeros((len(rows), length), dtype=np.int64)
        positions = np.zeros((len(rows), length), dtype=np.int64)
        text_of = np.full((len(rows), length), -1, dtype=np.int64)  # -1: padding
        number = 0
        for row, texts in enumerate(rows):
            at = 0
            for tokens in texts:
                ids[row, at : at + len(tokens)] = tokens
                positions[row, at : at + len(tokens)] = np.arange(len(tokens))
                text_of[row, at : at + len(tokens)] = number
                at += len(tokens)
                number += 1
        x = self.word[ids] + self.positions[positions] + self.token_type
        x = _layer_norm(x, *self.embedding_norm, self.eps)
        own = (text_of[:, :, None] == text_of[:, None, :]) & (text_of[:, None, :] >= 0)
        bias = np.where(own, np.float32(0.0), np.float32(-1e4))[:, None]  # keys of other texts or padding: none
        if self.relative_bias is not None:
            bias = bias + self._relative_bias(length)  # within a text, distances are the same as on its own
        hidden = x.shape[-1]
        size = hidden // self.heads
        scale = np.float32(1.0 / math.sqrt(size))
        for layer in self.layers:
            qkv = x @ layer.qkv + layer.qkv_bias
            # Contiguous heads: numpy's stacked matmul only reaches BLAS for contiguous operands.
            q, k, v = (
                np.ascontiguousarray(
                    qkv[..., i * hidden : (i + 1) * hidden].reshape(len(rows), length, self.heads, size).swapaxes(1, 2)
                )
                for i in range(3)
            )
            scores = (q @ np.ascontiguousarray(k.swapaxes(2, 3))) * scale + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(len(rows), length, hidden)
            x = _layer_norm(x + context @ layer.out + layer.out_bias, *layer.norm1, self.eps)
            up = _gelu(x @ layer.up + layer.up_bias)
            x = _layer_norm(x + up @ layer.down + layer.down_bias, *layer.norm2, self.eps)
        flat = text_of.reshape(-1)
        members = (flat[None, :] == np.arange(count)[:, None]).astype(np.float32)  # (texts, tokens): mean pooling
        pooled = (members @ x.reshape(-1, hidden)) / np.maximum(members.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Array = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


def _relative_buckets(length: int, buckets: int, max_distance: int = 128) -> np.ndarray[Any, np.dtype[np.int64]]:
    """MPNet's (T5's) bucket of each key position relative to each query position: one bucket per distance up
    to a quarter of the buckets, then logarithmically wider ones, each direction with half of them."""
    distance = np.arange(length)[None, :] - np.arange(length)[:, None]  # key - query
    half = buckets // 2
    exact = half // 2
    n = np.abs(distance)
    wide = exact + (np.log(np.maximum(n, 1) / exact) / math.log(max_distance / exact) * (half - exact)).astype(np.int64)
    found: np.ndarray[Any, np.dtype[np.int64]] = (distance > 0) * half + np.where(
        n < exact, n, np.minimum(wide, half - 1)
    )
    return found


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    result: Array = centred / np.sqrt(variance + eps) * weight + bias
    return result


def _gelu(x: Array) -> Array:
    """GELU in its tanh form: within 1e-3 of BERT's erf form, at a sixth of the cost of an erf in numpy."""
    inner = np.float32(math.sqrt(2 / math.pi)) * (x + np.float32(0.044715) * x * x * x)
    result: Array = (np.float32(0.5) * x * (np.float32(1.0) + np.tanh(inner))).astype(np.float32, copy=False)
    return result
