"""Metrics in Prometheus's text format, how log lines are written, and the per-request log line.

The log line carries what an operator needs to follow a request: id, model, provider, rounds, searches,
tools found and called, MCP errors, latencies and tokens; never a key. What every record gets before it gets
here (its request id, secrets redacted) is app/common/logs.py's; the counters themselves are the engine's
(app/engine/metrics.py).
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from app.common import redaction
from app.common.logs import install_log_hooks

METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST


def exposition(registry: CollectorRegistry, only: str | None = None) -> bytes:
    """This gateway's counters; under `serve --workers N`, every worker's, summed (each writes its own to files in
    PROMETHEUS_MULTIPROC_DIR, which `serve` sets), so a scrape is the same whichever worker answers it. With
    `only` (an identity id), the series labelled with another identity are left out."""
    source: Collector = registry
    if os.path.isdir(os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")):
        source = CollectorRegistry()
        MultiProcessCollector(source)  # type: ignore[no-untyped-call]
    return generate_latest(source if only is None else OwnSeries(source, only))


class OwnSeries(Collector):
    """`source`'s metrics without the series of identities other than `identity`: what a gateway key may see."""

    def __init__(self, source: Collector, identity: str) -> None:
        self.source = source
        self.identity = identity

    def collect(self) -> Iterable[Metric]:
        for family in self.source.collect():
            kept = copy.copy(family)
            kept.samples = [s for s in family.samples if s.labels.get("identity", self.identity) == self.identity]
            yield kept


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


CHATTY_LOGGERS = ("httpx", "httpx2", "mcp.server.streamable_http", "mcp.server.streamable_http_manager")


def configure_logging(level: str, log_format: str) -> None:
    install_log_hooks()
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # fastmcp gives its own logger Rich handlers and keeps it off the root: multi-line blocks in a JSON log, and a
    # highlighter quadratic in a long run of text, on the event loop. Its records take the one handler here too.
    library = logging.getLogger("fastmcp")
    library.handlers[:] = []
    library.propagate = True
    # HTTP clients log every request at INFO (httpx for upstreams, the MCP library's httpx2 for remote MCP servers,
    # several a call), and the MCP library each session it opens and ends: lines per request beside the gateway's
    # one, at DEBUG only.
    chatter = logging.DEBUG if level.upper() == "DEBUG" else logging.WARNING
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(chatter)
