"""Caches bounded by size and never keeping oversized keys: the index's word cache, the tokenizer's piece cache and
the deferral's token counts hold short keys only, and the stemmer never sees an unbounded word."""

from __future__ import annotations

from typing import Any

import pytest

from app.common import tokens
from app.core import deferral
from app.core.catalog import ToolEntry
from app.discovery import index
from app.discovery.index import MAX_FIELD_CHARS, MAX_STEM_CHARS, MAX_WORD_CHARS, tokenize, tool_fields
from tests.support import make_config


def test_long_words_are_cut_and_never_stemmed_or_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    stemmed: list[str] = []
    real = index._stemmer()

    class Spy:
        def stemWord(self, word: str) -> str:
            stemmed.append(word)
            return str(real.stemWord(word))

    monkeypatch.setattr(index, "_stemmer", Spy)
    words = tokenize("y" * 1_000_000 + " " + "z" * 40 + " weather")
    assert words[0] == "y" * MAX_WORD_CHARS and words[1] == "z" * 40 and words[2] == "weather"
    assert all(len(word) <= MAX_STEM_CHARS for word in stemmed), "the stemmer saw a long word"
    tokenize(" ".join(f"{'q' * 50}{i}" for i in range(1000)))  # a thousand long distinct words
    assert all(len(word) <= MAX_STEM_CHARS for word in index._words), "long words took cache slots"
    tokenize(" ".join(f"w{i}" for i in range(index.WORD_CACHE_SIZE + 100)))
    assert len(index._words) <= index.WORD_CACHE_SIZE


def test_a_callers_made_up_words_are_stemmed_within_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    stemmed: list[str] = []
    real = index._stemmer()

    class Spy:
        def stemWord(self, word: str) -> str:
            stemmed.append(word)
            return str(real.stemWord(word))

    monkeypatch.setattr(index, "_stemmer", Spy)
    with index.stem_budget(100):
        words = tokenize(" ".join(f"madeup{i}ing" for i in range(1000)) + " Walking")
    assert len(stemmed) == 100 and words[-1] == "walking", "past the budget a word is only lower-cased"
    assert "walking" not in index._words and tokenize("walking") == ["walk"], "an unstemmed word was cached"


def test_a_tool_field_is_read_up_to_its_cap() -> None:
    description = " ".join(f"word{i}" for i in range(100_000))
    schema = {"type": "object", "properties": {f"p{i}": {"description": "x " * 1000} for i in range(1000)}}
    entry = ToolEntry("t", "t", None, description, schema, deferred=True)
    fields = tool_fields(entry)
    assert len(fields["description"]) <= MAX_FIELD_CHARS // 2
    assert len(fields["parameters"]) <= MAX_FIELD_CHARS // 2


def test_the_piece_cache_is_bounded_in_bytes_and_skips_long_pieces() -> None:
    cache = tokens.PieceCache(max_bytes=10_000, max_piece_chars=8)
    cache["x" * 9] = [1]
    assert not cache, "a long piece was kept"
    for i in range(1000):
        cache[f"p{i}"] = [i]
    assert 0 < cache.bytes <= 10_000 and len(cache) < 1000
    encoding: Any = tokens._encoding()
    if encoding is not None:  # the real encoder uses it
        assert isinstance(encoding._cache, tokens.PieceCache)
        before = encoding._cache.bytes
        tokens.count_text("a" * 5000 + " " + "b" * 5000)
        assert encoding._cache.bytes - before < 1000, "one long piece took the cache"


def test_token_counts_of_large_servers_are_estimated_and_keyed_by_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[int] = []
    monkeypatch.setattr(deferral.tokens, "count_text", lambda text: counted.append(len(text)) or 1)
    config = make_config(mcpServers={"big": {"command": "unused"}, "small": {"command": "unused"}}, tool_sets={})
    big = [{"name": f"t{i}", "description": "d" * 1000} for i in range(1000)]
    small = [{"name": "t", "description": "a small tool, counted exactly"}]
    decided = deferral.decide_deferral(config, {"big": big, "small": small})
    assert all(length <= deferral.MAX_COUNTED_CHARS for length in counted), "a megabyte was tokenised"
    assert decided.estimated == frozenset({"big"}) and "estimated" in decided.servers["big"].reason
    assert all(isinstance(key, bytes) and len(key) == 32 for key in deferral._counts), "texts kept as keys"
