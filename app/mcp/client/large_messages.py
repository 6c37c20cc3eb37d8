"""Parsing one JSON-RPC message from an MCP server, in pieces when it is large, and a large tool listing's tools
apart from the SDK.

`json.loads` and pydantic each parse a whole document in one call that holds the interpreter lock: run in the
worker pool, a 4.7 MB listing of 10,000 tools would still hold the event loop for the whole parse. Here the
message's objects are walked in Python and each array is decoded an element at a time, so the lock is let go
between elements (Python switches threads every few milliseconds) and the loop keeps serving. The SDK then checks
a `tools/list` answer three times on the loop (against the protocol revision, as a model, and per tool: 0.25 s
for 10,000 tools); so the tools of a large listing are validated here, a `Tool` at a time, and handed to the
gateway beside the answer, which reaches the SDK with no tools in it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from json import JSONDecodeError, JSONDecoder
from json.decoder import WHITESPACE, scanstring  # type: ignore[attr-defined]
from typing import Any

import mcp_types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from app.common.offload import off_loop

REMEMBERED = 16  # ids of listing requests kept: an answer parsed where it arrives is not seen here again
LARGE_LINE_BYTES = 256 * 1024  # parsing this much JSON in one call takes about 2 ms: larger lines go in pieces
LISTING_LINE_BYTES = 16 * 1024  # a tools/list answer this large is checked off the loop (the SDK's checks cost more)
_decoder = JSONDecoder()


@dataclass(frozen=True)
class Parsed:
    message: SessionMessage | Exception  # what the SDK's session gets
    tools: list[mcp_types.Tool] | None = None  # a large `tools/list` answer's tools, taken out of `message`


class Listings:
    """One connection's `tools/list` requests in flight, and the tools of the last large answer to one, which
    reached the SDK without them; the stdio and the remote transports keep one each."""

    def __init__(self) -> None:
        self.pending: dict[Any, None] = {}
        self._listed: list[mcp_types.Tool] | None = None

    def asked(self, ident: Any) -> None:
        if isinstance(ident, int | str):
            self.pending[ident] = None
            while len(self.pending) > REMEMBERED:
                del self.pending[next(iter(self.pending))]

    def answered(self, ident: Any) -> None:
        self.pending.pop(ident, None)

    def take_listed(self) -> list[mcp_types.Tool] | None:
        """The last large listing's tools, once; None when the last answer was whole."""
        tools, self._listed = self._listed, None
        return tools

    async def parse(self, data: bytes) -> Parsed:
        """A large message, parsed in the worker pool; a listing's tools kept here, out of what the SDK gets."""
        parsed = await off_loop(parse_large, data, frozenset(self.pending))
        if parsed.tools is not None and isinstance(parsed.message, SessionMessage):
            self._listed = parsed.tools
            self.answered(getattr(parsed.message.message, "id", None))
        return parsed


def too_large(limit: int) -> str:
    """Why a connection ended on a message over `mcp_limits.max_message_bytes`, the same for every transport."""
    return f"the server sent a message over {limit:,} bytes (mcp_limits.max_message_bytes)"


def parse_line(line: bytes) -> SessionMessage | Exception:
    """A line as the SDK parses it: a message, or the error that it is not one (the session reports it)."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return exc


def parse_large(line: bytes, listings: Collection[Any]) -> Parsed:
    """A large line, decoded in pieces; when it answers one of `listings` (ids of `tools/list` requests), its
    tools validated and set apart. Meant for the worker pool."""
    try:
        value = decode(line.decode("utf-8"))
        tools = _listed_tools(value, listings)
        return Parsed(SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False)), tools)
    except (ValueError, RecursionError) as exc:  # Unicode, JSON and validation errors are ValueErrors
        return Parsed(exc)


def _listed_tools(value: Any, listings: Collection[Any]) -> list[mcp_types.Tool] | None:
    """The tools of a `tools/list` answer, taken out of it; None (and the answer as it was, for the SDK to say
    what is wrong) when it is no such answer or a tool is not valid."""
    ident = value.get("id") if isinstance(value, dict) else None
    if not isinstance(ident, int | str) or ident not in listings:
        return None
    result = value.get("result")
    items = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(items, list):
        return None
    try:
        tools = [mcp_types.Tool.model_validate(item, by_name=False) for item in items]
    except ValidationError:
        return None
    result["tools"] = []
    return tools


def decode(text: str) -> Any:
    """`json.loads(text)`, with objects walked here and arrays decoded an element at a time."""
    value, end = _value(text, _skip(text, 0))
    if _skip(text, end) != len(text):
        raise JSONDecodeError("Extra data", text, end)
    return value


def _value(text: str, index: int) -> tuple[Any, int]:
    if text.startswith("{", index):
        return _object(text, index)
    if text.startswith("[", index):
        return _array(text, index)
    return _decoder.raw_decode(text, index)


def _object(text: str, index: int) -> tuple[dict[str, Any], int]:
    result: dict[str, Any] = {}
    index = _skip(text, index + 1)
    if text.startswith("}", index):
        return result, index + 1
    while True:
        if not text.startswith('"', index):
            raise JSONDecodeError("Expecting property name enclosed in double quotes", text, index)
        key, index = scanstring(text, index + 1)
        index = _skip(text, index)
        if not text.startswith(":", index):
            raise JSONDecodeError("Expecting ':' delimiter", text, index)
        result[key], index = _value(text, _skip(text, index + 1))
        index, done = _after_item(text, index, "}")
        if done:
            return result, index


def _array(text: str, index: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    index = _skip(text, index + 1)
    if text.startswith("]", index):
        return items, index + 1
    while True:
        item, index = _decoder.raw_decode(text, index)
        items.append(item)
        index, done = _after_item(text, index, "]")
        if done:
            return items, index


def _after_item(text: str, index: int, close: str) -> tuple[int, bool]:
    """Past the ',' before the next item, or past `close` (then done)."""
    index = _skip(text, index)
    if text.startswith(",", index):
        return _skip(text, index + 1), False
    if text.startswith(close, index):
        return index + 1, True
    raise JSONDecodeError("Expecting ',' delimiter", text, index)


def _skip(text: str, index: int) -> int:
    match = WHITESPACE.match(text, index)
    return match.end() if match else index
