"""Anthropic Messages requests as they arrive: the body parsed and validated into the codec's protocol types, and
Anthropic's own server tools refused (they run at Anthropic, not through this gateway)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from app.codecs.anthropic.protocol import MessagesRequest
from app.common.errors import GatewayError
from app.fronts.wire import check_counts, invalid_request, load_body


def _server_tool(index: int, tool: Any) -> GatewayError | None:
    """Anthropic's own server tools (web search, code execution, ...) run at Anthropic, not through this gateway."""
    if isinstance(tool, dict) and tool.get("type") not in (None, "custom") and "input_schema" not in tool:
        return GatewayError(
            400,
            f"Invalid request: 'tools[{index}]' is a server tool of type {tool.get('type')!r}; this gateway "
            "serves client tools (with 'input_schema') and its own MCP tools.",
            param=f"tools[{index}]",
        )
    return None


def parse_messages_request(
    raw_body: bytes, max_messages: int = 2000, max_tools: int = 512, counting: bool = False
) -> tuple[MessagesRequest, dict[str, Any]]:
    """Decode and validate a request body; return the model and the raw dict (its blocks kept as sent).
    `count_tokens` requests (`counting`) have no `max_tokens`."""
    payload = load_body(raw_body)
    check_counts(payload, max_messages, max_tools)
    for index, tool in enumerate(payload.get("tools") or () if isinstance(payload.get("tools"), list) else ()):
        refusal = _server_tool(index, tool)
        if refusal is not None:
            raise refusal
    try:
        request = MessagesRequest.model_validate({"max_tokens": 1, **payload} if counting else payload)
    except ValidationError as exc:
        raise invalid_request(exc) from None
    return request, payload
