"""A stored response's input items, a page at a time, as `GET /v1/responses/{id}/input_items` lists them.

The OpenAI SDKs page through them (`responses.input_items.list`) with `after` / `before` cursors (item ids),
`limit` (1 to 100, 20 by default) and `order` (`desc` by default). The gateway keeps a response's items as the
conversation sent them, many without an id (a client's own input rarely carries one): each gets one derived from
the response's id and its place, the same at every read, so a cursor names the same item every time; a message
written in shorthand (`{"role": "user", "content": "hi"}`) is listed as the full item the SDKs read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from app.common.errors import GatewayError
from app.core.model import JsonObject

MAX_LIMIT = 100


@dataclass(frozen=True, slots=True)
class Page:
    limit: int = 20
    order: Literal["asc", "desc"] = "desc"
    after: str | None = None
    before: str | None = None


def input_page(query: Mapping[str, str]) -> Page:
    """The page a request's query asks for; a 400 naming the parameter for a value out of its range."""
    limit_text = query.get("limit", "20")
    try:
        limit = int(limit_text)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise GatewayError(400, f"Invalid 'limit': {limit_text[:20]!r}; it must be an integer from 1 to {MAX_LIMIT}.",
                           param="limit", code="invalid_value")  # fmt: skip
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise GatewayError(400, f"Invalid 'order': {order[:20]!r}; it must be 'asc' or 'desc'.", param="order",
                           code="invalid_value")  # fmt: skip
    return Page(limit, "asc" if order == "asc" else "desc", query.get("after") or None, query.get("before") or None)


def listed(response_id: str, items: list[JsonObject], page: Page) -> JsonObject:
    """One page of `items` (the response's input, oldest first) as the API's list object."""
    shown = [_item(response_id, index, item) for index, item in enumerate(items)]
    if page.order == "desc":
        shown.reverse()
    ids = [str(item["id"]) for item in shown]
    start, end = 0, len(shown)
    for cursor, name in ((page.after, "after"), (page.before, "before")):
        if cursor is not None and cursor not in ids:
            raise GatewayError(400, f"Invalid '{name}': no input item of this response has the id {cursor[:80]!r}.",
                               param=name, code="invalid_value")  # fmt: skip
    if page.after is not None:
        start = ids.index(page.after) + 1
    if page.before is not None:
        end = ids.index(page.before)
    window = shown[start:end]
    data = window[: page.limit] if page.before is None else window[-page.limit :]
    more = len(window) > page.limit
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": more}  # fmt: skip


def _item(response_id: str, index: int, item: JsonObject) -> JsonObject:
    """The item as listed: with an id, and a shorthand message as a full `message` item."""
    shown: dict[str, Any] = dict(item)
    if "type" not in shown and "role" in shown:
        shown = {"type": "message", **shown}
    if shown.get("type") == "message":
        content = shown.get("content")
        if isinstance(content, str):
            kind = "output_text" if shown.get("role") == "assistant" else "input_text"
            shown["content"] = [{"type": kind, "text": content}]
        shown.setdefault("status", "completed")
    if not shown.get("id"):
        shown["id"] = f"{_prefix(shown)}_{response_id.removeprefix('resp_')}_{index}"
    return shown


def _prefix(item: JsonObject) -> str:
    return {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}.get(
        str(item.get("type")), "item"
    )
