"""The last finished requests, in memory, for the console: what each searched, found and called.

Built from the request's record (app/engine/record.py) when its log line is written, so it costs one small dict
per request and a bounded deque. A search is marked a likely miss when it found nothing, when its results were
all weak (meaning-only) matches, or when the model searched again in the same request: the searches worth a look
when tuning tool descriptions or hints.

Anyone with a gateway key writes into it (a model name, a model's queries and tool names), so every text is
capped and every list bounded, and configured secrets are redacted as in the log line.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from app.common import redaction
from app.discovery.params import MAX_QUERY_CHARS
from app.discovery.search import shown_name
from app.engine.record import RequestRecord

NOTHING_FOUND = "found nothing"
WEAK_ONLY = "weak matches only"
SEARCHED_AGAIN = "followed by another search"
MAX_ITEMS = 50  # searches per request, and names per list, kept


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
    for position, search in enumerate(record.searches[:MAX_ITEMS]):
        reasons = [NOTHING_FOUND] if not search.found else []
        if search.found and search.weak:
            reasons.append(WEAK_ONLY)
        if position + 1 < count:
            reasons.append(SEARCHED_AGAIN)
        query = search.query[:MAX_QUERY_CHARS] if search.query is not None else None
        item = {"query": query, "found": _names(search.found), "weak": search.weak, "miss": reasons}
        if len(search.queries) > 1:  # one call of several queries
            item["queries"] = [text[:MAX_QUERY_CHARS] for text in search.queries[:MAX_ITEMS]]
        searches.append(item)
    stats = record.discovery
    called = stats.tools_called if stats is not None else [call.name for call in record.mcp_calls]
    model = facts.get("model")
    summary = {
        "id": request_id,
        "time": time.time(),
        "status": status,
        "identity": facts.get("identity"),
        "model": shown_name(model) if isinstance(model, str) else None,
        "provider": facts.get("provider"),
        "stream": bool(facts.get("stream")),
        "rounds": record.rounds,
        "searches": searches,
        "prefetched": _names(stats.tools_prefetched) if stats is not None else [],
        "tools_called": _names(called),
        "mcp_errors": record.mcp_errors,
        "tokens_saved": record.tokens_saved,
        "total_tokens": record.usage.total_tokens if record.usage is not None else None,
        "cache_read_tokens": record.usage.cache_read_tokens if record.usage is not None else None,
        "cache_write_tokens": record.usage.cache_write_tokens if record.usage is not None else None,
        "cache_hits_lost": stats.cache.cache_hits_lost if stats is not None else 0,
        "total_ms": total_ms,
        "likely_miss": any(search["miss"] for search in searches),
    }
    redacted: dict[str, Any] = redaction.redact_value(summary)
    return redacted


def _names(names: Sequence[str]) -> list[str]:
    return [shown_name(name) for name in names[:MAX_ITEMS]]
