"""Metrics (Prometheus text format), the per-request log line, and what every log record gets on its way.

Each gateway owns its registry, so several gateways in one process (tests, embedding) never share counters.
The log line carries what an operator needs to follow a request: id, model, provider, rounds, searches,
tools found and called, MCP errors, latencies and tokens; never a key. Every record, from any library and at
any level, is stamped with the request id of the request it was logged for (a context variable set at the
edge) and has the configured secrets redacted before any handler sees it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from app import redaction

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("toolsift_requests", "Chat requests by HTTP status", ["status", "stream"], registry=r)
        self.rounds = Counter("toolsift_rounds", "Upstream rounds", registry=r)
        self.searches = Counter("toolsift_search_calls", "search_tools calls answered", registry=r)
        self.discovered = Counter("toolsift_tools_discovered", "Tools loaded by search_tools", registry=r)
        self.prefetched = Counter("toolsift_tools_prefetched", "Tools loaded by prefetch", registry=r)
        self.tokens_saved = Counter(
            "toolsift_tool_tokens_saved", "Estimated tool-definition tokens not sent upstream", registry=r
        )
        self.mcp_calls = Histogram(
            "toolsift_mcp_call_seconds", "MCP tool call latency", ["server"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.mcp_errors = Counter("toolsift_mcp_errors", "MCP tool calls that failed", ["server"], registry=r)
        self.upstream = Histogram(
            "toolsift_upstream_seconds", "Upstream time per request", ["provider"], buckets=LATENCY_BUCKETS, registry=r
        )

    def record_mcp_call(self, server: str, seconds: float, failed: bool) -> None:
        self.mcp_calls.labels(server).observe(seconds)
        if failed:
            self.mcp_errors.labels(server).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


REQUEST_ID: ContextVar[str | None] = ContextVar("toolsift_request_id", default=None)
_base_factory = logging.getLogRecordFactory()


def _record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Every log record: stamped with the current request id, its text and traceback redacted."""
    record = _base_factory(*args, **kwargs)
    record.request_id = REQUEST_ID.get()
    try:
        message = record.getMessage()
    except Exception:  # a malformed call: logging reports it when a handler formats the record
        return record
    redacted = redaction.redact(message)
    if redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info and not record.exc_text:
        record.exc_text = redaction.redact(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redaction.redact(record.stack_info)
    return record


def install_log_hooks() -> None:
    """Route every log record through `_record` (idempotent)."""
    if logging.getLogRecordFactory() is not _record:
        logging.setLogRecordFactory(_record)


def guard_secrets(secrets: Iterable[str]) -> int:
    """Redact `secrets` from logs and outgoing text from now on; the token is for `redaction.unregister`."""
    install_log_hooks()
    return redaction.register(secrets)


class TextFormatter(logging.Formatter):
    """`time level logger message`, then ` id=<request id>` when the line was logged for a request (the request
    line itself already starts with its `id=`)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        request_id = getattr(record, "request_id", None)
        if request_id and not isinstance(getattr(record, "fields", None), dict):
            line += f" id={request_id}"
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line; a request line's fields become top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        request_id = getattr(record, "request_id", None)
        if request_id:
            entry["request_id"] = request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry["event"] = getattr(record, "event", "")
            entry.update(redaction.redact_value(fields))
        else:
            entry["message"] = record.getMessage()
        if record.exc_info:
            entry["exception"] = record.exc_text or redaction.redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str, log_format: str) -> None:
    install_log_hooks()
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # httpx logs every upstream call at INFO: a second line per round beside the gateway's one line per request.
    logging.getLogger("httpx").setLevel(logging.DEBUG if level.upper() == "DEBUG" else logging.WARNING)


def log_fields(logger: logging.Logger, event: str, fields: dict[str, Any]) -> None:
    """Log `event key=value ...` (plain) or as JSON keys (with JsonFormatter)."""
    text = " ".join(f"{key}={value}" for key, value in fields.items())
    logger.info("%s %s", event, text, extra={"fields": fields, "event": event})
