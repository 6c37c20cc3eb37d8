"""Server-Sent Events framing, the wire format every front's stream is written in: a data event, a named error
event, the keep-alive comment. The response that carries them (deadline, keep-alives, disconnects) is the
server edge's (app/server/sse.py)."""

from __future__ import annotations

import json
from typing import Any

KEEPALIVE = ": keep-alive\n\n"


def sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n"


def named_sse(kind: str, data: dict[str, Any]) -> str:
    """An event named `kind`, as the Responses API and Anthropic Messages write every event."""
    return f"event: {kind}\n" + sse(data)


def error_sse(body: dict[str, Any]) -> str:
    """An error event after the head: named by the body's `type` when it has one (Anthropic's `error` event),
    since clients of formats whose events are named ignore unnamed ones."""
    kind = body.get("type")
    return named_sse(kind, body) if isinstance(kind, str) else sse(body)
