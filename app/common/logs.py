"""What every log record gets on its way, from any library and at any level: the id of the request it was
logged for (a context variable set at the edge), the configured secrets redacted, and its control characters
escaped before any handler sees it.

A logged value is anyone's (a model name, a header, a tool's error): a newline in it would start a forged line
at column 0 of the text log, a carriage return or an ANSI escape would rewrite what a terminal shows. So a
record's message is one line whatever it holds; only a traceback keeps its own line breaks.

Shared, low in the tree, because whatever holds secrets (a gateway, a CLI command) guards them here; how lines
are formatted and the per-request line itself belong to the server edge (app/server/observability.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from contextvars import ContextVar
from secrets import token_hex
from typing import Any

from app.common import redaction

REQUEST_ID: ContextVar[str | None] = ContextVar("toolsift_request_id", default=None)
_base_factory = logging.getLogRecordFactory()
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators, as Python escapes them
_CONTROLS = {code: _NAMED.get(chr(code), f"\\x{code:02x}") for code in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROLS |= {0x2028: "\\u2028", 0x2029: "\\u2029"}
_TRACEBACK_CONTROLS = {code: text for code, text in _CONTROLS.items() if chr(code) != "\n"}


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """`text` with its control characters written as escapes (`\\n`, `\\x1b`), so it stays on one line."""
    return text.translate(_TRACEBACK_CONTROLS if keep_newlines else _CONTROLS)


def _record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Every log record: stamped with the current request id, its text and traceback redacted, its text's control
    characters escaped (a traceback keeps its line breaks)."""
    record = _base_factory(*args, **kwargs)
    record.request_id = REQUEST_ID.get()
    try:
        message = record.getMessage()
    except Exception:  # a malformed call: logging reports it when a handler formats the record
        return record
    redacted = escape_controls(redaction.redact(message))
    if redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info and not record.exc_text:
        traceback = redaction.redact(logging.Formatter().formatException(record.exc_info))
        record.exc_text = escape_controls(traceback, keep_newlines=True)
    if record.stack_info:
        record.stack_info = escape_controls(redaction.redact(record.stack_info), keep_newlines=True)
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


def log_fields(logger: logging.Logger, event: str, fields: dict[str, Any], quoted: tuple[str, ...] = ()) -> None:
    """Log `event key=value ...` (plain) or as JSON keys (with a JSON formatter); the `quoted` keys' values (an
    error's reason: words and spaces) are quoted in the plain line, so it still splits on spaces."""
    text = " ".join(f"{key}={_plain(value) if key in quoted else value}" for key, value in fields.items())
    logger.info("%s %s", event, text, extra={"fields": fields, "event": event})


def _plain(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)
