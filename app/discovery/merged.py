"""Two indexes searched as one: a request's own deferred tools beside the shared index of MCP tools."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Protocol

from app.core.catalog import ToolEntry
from app.discovery.index import ToolIndex


class Ranker(Protocol):
    @property
    def parts(self) -> tuple[ToolIndex, ...]: ...

    def rank(self, query: str, required: Sequence[str] = ()) -> Iterator[tuple[ToolEntry, float]]: ...

    def best_possible(self, query: str) -> float: ...


class MergedIndex:
    """Two indexes searched as one, results merged by score: a request's own deferred tools beside the shared
    index of MCP tools, without rebuilding the large one for every request."""

    def __init__(self, first: Ranker, second: Ranker) -> None:
        self.first, self.second = first, second

    @property
    def parts(self) -> tuple[ToolIndex, ...]:
        return (*self.first.parts, *self.second.parts)

    def best_possible(self, query: str) -> float:
        return max(self.first.best_possible(query), self.second.best_possible(query))

    def rank(self, query: str, required: Sequence[str] = ()) -> Iterator[tuple[ToolEntry, float]]:
        return heapq.merge(self.first.rank(query, required), self.second.rank(query, required), key=lambda p: -p[1])
