"""A finished request's one log line, its metrics and its place among the recent requests, all from what its
events recorded (app/engine/record.py), never from the loop's insides. Written once, here, for every front."""

from __future__ import annotations

import logging
from typing import Any

from app.common.logs import log_fields
from app.core.model import Usage
from app.engine.metrics import Metrics
from app.engine.recent import RecentRequests
from app.engine.record import RequestRecord

log = logging.getLogger("toolsift.http")


def account(
    metrics: Metrics,
    recent: RecentRequests,
    request_id: str,
    status: int,
    total_ms: float,
    facts: dict[str, Any],
    record: RequestRecord,
) -> None:
    """Count the request in the metrics, log its line and keep it for the console. `facts` are the edge's:
    identity, model, stream, and the error a failed request's line names."""
    facts["provider"] = record.provider
    metrics.requests.labels(str(status), str(bool(facts.get("stream"))).lower()).inc()
    metrics.identity_requests.labels(facts["identity"], str(status)).inc()
    if record.usage is not None and record.usage.total_tokens > 0:  # an upstream's usage is any integer
        metrics.identity_tokens.labels(facts["identity"]).inc(record.usage.total_tokens)
    if record.usage is not None:
        _count_cache(metrics, facts["identity"], record.usage)
    fields: dict[str, Any] = {"id": request_id, "status": status, **{k: v for k, v in facts.items() if k != "error"}}
    stats = record.discovery
    if stats is not None:
        fields.update(
            rounds=record.rounds,
            searches=stats.search_calls,
            found=",".join(stats.tools_discovered) or "-",
            prefetched=",".join(stats.tools_prefetched) or "-",
            called=",".join(stats.tools_called) or "-",
            mcp_errors=record.mcp_errors,
            upstream_ms=round(record.upstream_seconds * 1000, 1),
            tokens=record.usage.total_tokens if record.usage is not None else "-",
            tool_tokens_saved=record.tokens_saved,
            cache_hits_lost=stats.cache.cache_hits_lost,
        )
        metrics.cache_hits_lost.inc(stats.cache.cache_hits_lost)
        metrics.searches.inc(stats.search_calls)
        metrics.discovered.inc(len(stats.tools_discovered))
        metrics.prefetched.inc(len(stats.tools_prefetched))
    metrics.rounds.inc(record.rounds)
    metrics.tokens_saved.inc(record.tokens_saved)
    if record.rounds and facts.get("provider"):
        metrics.upstream.labels(facts["provider"]).observe(record.upstream_seconds)
    fields["total_ms"] = total_ms
    if facts.get("error"):
        fields["error"] = facts["error"]
    log_fields(log, "request", fields, quoted=("error",))
    recent.add(request_id, status, facts, record, total_ms)


def _count_cache(metrics: Metrics, identity: str, usage: Usage) -> None:
    """The upstream's cache reads and writes, where it reported them (any integer, so only what is positive)."""
    if usage.cache_read_tokens is not None and usage.cache_read_tokens > 0:
        metrics.cached_tokens.labels(identity).inc(usage.cache_read_tokens)
    if usage.cache_write_tokens is not None and usage.cache_write_tokens > 0:
        metrics.cache_write_tokens.labels(identity).inc(usage.cache_write_tokens)
