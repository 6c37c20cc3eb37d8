"""What an MCP server logs (`notifications/message`): one bounded line in the gateway's log, at the server's pace
within a budget.

Without a handler of its own, fastmcp formats a server's log message through Rich on the event loop: its
highlighter is quadratic on long runs (one 64 KB message held the loop for a minute) and it writes multi-line
blocks even into a `--log-format json` log. Here a message costs time linear in what is kept: its text is cut at
LOG_TEXT_CHARS as it is rendered (a nested `data` is walked only as far as the cut), it is one record of the
gateway's own logging (`toolsift.mcp.server`; a JSON log gets its parts as fields), and each server logs at most
LOG_RATE messages a second (a burst of LOG_BURST); the rest are counted (app/mcp/client/chatter.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from mcp_types import LoggingMessageNotificationParams

from app.mcp.client.chatter import Chatter, Dropped

log = logging.getLogger("toolsift.mcp.server")

LOG_TEXT_CHARS = 2000
LOG_RATE, LOG_BURST = 10.0, 50
CUT_MARK = "..."
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
}  # error, critical, alert, emergency: ERROR (a server's emergency is not the gateway's)


class ServerLog:
    """One server's log handler, for fastmcp's `Client(log_handler=...)`."""

    def __init__(self, server: str, on_dropped: Dropped | None = None) -> None:
        self.server = server
        self.chatter = Chatter(LOG_RATE, LOG_BURST)
        self._on_dropped = on_dropped

    async def __call__(self, message: LoggingMessageNotificationParams) -> None:
        level = LEVELS.get(str(message.level).lower(), logging.ERROR)
        if not log.isEnabledFor(level):
            return
        if not self.chatter.allow():
            self.chatter.drop()
            if self._on_dropped is not None:
                self._on_dropped(self.server, "log_messages", 1)
            return
        dropped, _ = self.chatter.take_dropped()
        origin = preview(message.logger, 200) if message.logger is not None else None
        text = preview(message.data, LOG_TEXT_CHARS)
        fields: dict[str, Any] = {"server": self.server, "server_level": str(message.level)[:20]}
        if origin is not None:
            fields["server_logger"] = origin
        if dropped:
            fields["dropped"] = dropped
        fields["text"] = text
        # The server's own logger name is quoted: its spaces cannot pose as more `key=value` pairs of the line.
        head = " ".join(
            f"{key}={json.dumps(value, ensure_ascii=False) if key == 'server_logger' else value}"
            for key, value in fields.items()
            if key != "text"
        )
        log.log(level, "mcp server log %s %s", head, text, extra={"fields": fields, "event": "mcp server log"})


class SdkRecords(logging.Filter):
    """The MCP SDK's own client loggers log once per bad message a server sends (a notification that fails
    validation, with its traceback; an SSE event it cannot parse; an unknown event type, named in the line): one
    such record per message would let a server fill the log. Within LOG_RATE a second (a burst of LOG_BURST) for
    them all, each cut at LOG_TEXT_CHARS; the next one that passes says how many were dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.chatter = Chatter(LOG_RATE, LOG_BURST)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.chatter.allow():
            self.chatter.drop()
            return False
        dropped, _ = self.chatter.take_dropped()
        message = record.getMessage()
        if len(message) > LOG_TEXT_CHARS or dropped:
            cut = message if len(message) <= LOG_TEXT_CHARS else message[:LOG_TEXT_CHARS] + CUT_MARK
            record.msg, record.args = cut + (f" ({dropped} similar records dropped)" if dropped else ""), None
        return True


SDK_LOGGERS = ("client", "mcp.client.session", "mcp.client.streamable_http", "mcp.client.sse", "mcp.client.stdio")


def quiet_sdk_logs() -> None:
    """Put the MCP SDK's client loggers under one SdkRecords budget (once per process)."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, SdkRecords) for existing in logger.filters):
            logger.addFilter(SDK_RECORDS)


class _Mark(str):
    """Punctuation `preview` writes as it is (a plain `str` in the data is quoted)."""


def preview(value: Any, limit: int) -> str:
    """`value` as JSON-like text of at most `limit` characters (and a cut mark), a string as itself: built a piece
    at a time, so a megabyte of data, or data nested 100,000 deep, costs no more than the text kept."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + CUT_MARK
    parts: list[str] = []
    size = 0
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack and size <= limit:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        if isinstance(item, _Mark):
            piece = str(item)
        elif isinstance(item, dict):
            stack.append(_members(item, limit))
            continue
        elif isinstance(item, list | tuple):
            stack.append(_elements(item))
            continue
        else:
            piece = _scalar(item, limit)
        parts.append(piece)
        size += len(piece)
    text = "".join(parts)
    return text[:limit] + CUT_MARK if stack or len(text) > limit else text


_END = object()


def _members(data: dict[Any, Any], limit: int) -> Iterator[Any]:
    yield _Mark("{")
    for index, (key, value) in enumerate(data.items()):
        yield _Mark((", " if index else "") + _scalar(str(key), limit) + ": ")
        yield value
    yield _Mark("}")


def _elements(data: list[Any] | tuple[Any, ...]) -> Iterator[Any]:
    yield _Mark("[")
    for index, value in enumerate(data):
        if index:
            yield _Mark(", ")
        yield value
    yield _Mark("]")


def _scalar(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return json.dumps(value[:limit], ensure_ascii=False)
    if value is None or isinstance(value, bool | float):
        return json.dumps(value)
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError:  # past Python's digit limit for int-to-text
            return "<a very large number>"
    return repr(type(value).__name__)


SDK_RECORDS = SdkRecords()
