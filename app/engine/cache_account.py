"""What discovery did to a request's bill, with the upstream's prompt cache in mind: two figures, not one.

Deferring a tool keeps its definition out of every call (`tool_tokens_kept_out`), but providers render `tools`
before the system prompt and the messages, so a call whose tools differ from the call before it cannot read the
rest of its prompt from the cache. `cache_hits_lost` estimates that: for each round whose tools (names, in order)
differ from the previous round's, the previous round's prompt tokens after its tool definitions (its prompt as
the upstream reported it, less its tools' estimated tokens), which that round would otherwise have read from the
cache. Counted within one request; a round with no reported usage counts nothing. The upstream's own cache
reads and writes, summed over rounds, come beside them as it reported them.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.catalog import estimate_tokens
from app.core.model import JsonObject, ToolSpec, Usage


@dataclass(frozen=True, slots=True)
class CacheFigures:
    cache_read_tokens: int | None = None  # None: no upstream call reported its cache
    cache_write_tokens: int | None = None
    tool_tokens_kept_out: int = 0
    cache_hits_lost: int = 0

    def as_json(self) -> JsonObject:
        return {
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "tool_tokens_kept_out": self.tool_tokens_kept_out,
            "cache_hits_lost": self.cache_hits_lost,
        }


class CacheAccount:
    """Fed once per upstream call, in order; `figures` at any time."""

    def __init__(self) -> None:
        self._read: int | None = None
        self._write: int | None = None
        self._kept_out = 0
        self._lost = 0
        self._tools: list[ToolSpec] = []  # the previous round's, and their names
        self._names: list[str] | None = None
        self._prompt = 0  # the previous round's reported prompt tokens

    def round(self, tools: list[ToolSpec], usage: Usage | None, unsent_tool_tokens: int, answered: bool) -> None:
        names = [spec.name for spec in tools]
        if self._names is not None and names != self._names and self._prompt:
            self._lost += max(self._prompt - tool_tokens(self._tools), 0)
        self._tools, self._names, self._prompt = tools, names, usage.input_tokens if usage is not None else 0
        if answered:
            self._kept_out += unsent_tool_tokens
        if usage is not None:
            if usage.cache_read_tokens is not None:
                self._read = (self._read or 0) + usage.cache_read_tokens
            if usage.cache_write_tokens is not None:
                self._write = (self._write or 0) + usage.cache_write_tokens

    def figures(self) -> CacheFigures:
        return CacheFigures(self._read, self._write, self._kept_out, self._lost)


def tool_tokens(tools: list[ToolSpec]) -> int:
    """The definitions' estimated tokens, as the catalog estimates them; only computed when the tools changed."""
    return sum(
        estimate_tokens({"name": spec.name, "description": spec.description, "parameters": spec.parameters})
        for spec in tools
    )
