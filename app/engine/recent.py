"""The last finished requests, in memory, for the console: what each searched, found and called.

Built from the request's record (app/engine/record.py) when its log line is written, so it costs one small dict
per request and a bounded deque. A search is marked a likely miss when it found nothing, when its results were
all weak (meaning-only) matches, or when the model searched again in the same request: the searches worth a look
when tuning tool descriptions or hints.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from app.engine.record import RequestRecord

NOTHING_FOUND = "found nothing"
WEAK_ONLY = "weak matches only"
SEARCHED_AGAIN = "followed by another search"


class RecentRequests:
    """A ring of the last `size` finished requests, newest last (0 keeps none)."""

    def __init__(self, size: int) -> None:
        self._ring: deque[dict[str, Any]] = deque(maxlen=size)

    def add(self, request_id: str, status: int, facts: dict[str, Any], record: RequestRecord, total_ms: float) -> None:
        if self._ring.maxlen:
            self._ring.append(summarize(request_id, status, facts, record, total_ms))

    def latest(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Newest first."""
        items = list(reversed(self._ring))
        return items if limit is None else items[: max(limit, 0)]


def summarize(
    request_id: str, status: int, facts: dict[str, Any], record: RequestRecord, total_ms: float
) -> dict[str, Any]:
    count = len(record.searches)
    searches = []
    for position, search in enumerate(record.searches):
        reasons = [NOTHING_FOUND] if not search.found else []
        if search.found and search.weak:
            reasons.append(WEAK_ONLY)
        if position + 1 < count:
            reasons.append(SEARCHED_AGAIN)
        searches.append({"query": search.query, "found": list(search.found), "weak": search.weak, "miss": reasons})
    stats = record.discovery
    called = list(stats.tools_called) if stats is not None else [call.name for call in record.mcp_calls]
    return {
        "id": request_id,
        "time": time.time(),
        "status": status,
        "model": facts.get("model"),
        "provider": facts.get("provider"),
        "stream": bool(facts.get("stream")),
        "rounds": record.rounds,
        "searches": searches,
        "prefetched": list(stats.tools_prefetched) if stats is not None else [],
        "tools_called": called,
        "mcp_errors": record.mcp_errors,
        "tokens_saved": record.tokens_saved,
        "total_tokens": record.usage.total_tokens if record.usage is not None else None,
        "total_ms": total_ms,
        "likely_miss": any(search["miss"] for search in searches),
    }
