"""What every log record gets on its way, from any library and at any level: the id of the request it was
logged for (a context variable set at the edge) and the configured secrets redacted before any handler sees it.

Shared, low in the tree, because whatever holds secrets (a gateway, a CLI command) guards them here; how lines
are formatted and the per-request line itself belong to the server edge (app/server/observability.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextvars import ContextVar
from secrets import token_hex
from typing import Any

from app import redaction

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


def new_request_id() -> str:
    """A fresh request id, for a request whose client sent none (or none usable)."""
    return f"req_{token_hex(8)}"
