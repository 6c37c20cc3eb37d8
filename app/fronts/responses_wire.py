"""OpenAI Responses API requests as they arrive: the body parsed and validated into the codec's protocol types.

What an OpenAI-compatible chat upstream cannot take (hosted tools, server-side conversations, background runs,
stored prompts) is refused with a 400 naming it, rather than dropped: a client must not believe a tool ran that
never did. Logic lives in app/fronts/responses.py and the Responses codec.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from app.codecs.responses.protocol import (
    HOSTED_TOOLS,
    ITEM_MODELS,
    SEARCH_TOOL,
    FunctionTool,
    InputItem,
    ParsedResponses,
    ResponsesRequest,
)
from app.errors import GatewayError
from app.fronts.wire import invalid_request, load_body

UNSUPPORTED_FIELDS = {
    "conversation": "server-side conversations; send 'previous_response_id' or the whole input instead",
    "prompt": "stored prompts",
}


def parse_responses_request(raw_body: bytes, max_items: int, max_tools: int) -> ParsedResponses:
    payload = load_body(raw_body)
    for name, limit in (("input", max_items), ("tools", max_tools)):
        value = payload.get(name)
        if isinstance(value, list) and len(value) > limit:
            message = f"Too many {name}: {len(value)} (this gateway accepts at most {limit})."
            raise GatewayError(400, message, param=name)
    for name, what in UNSUPPORTED_FIELDS.items():
        if payload.get(name) is not None:
            raise GatewayError(400, f"'{name}' is not supported by this gateway ({what}).", param=name)
    try:
        request = ResponsesRequest.model_validate(payload)
    except ValidationError as exc:
        raise invalid_request(exc) from None
    if request.background:
        raise GatewayError(400, "'background' responses are not supported by this gateway.", param="background")
    if not request.input and request.previous_response_id is None:
        raise GatewayError(400, "Invalid request: 'input' is required and must not be empty.", param="input")
    raw_items = _raw_items(request.input)
    items = input_items(raw_items)
    tools = [tool for index, raw in enumerate(request.tools or ()) if (tool := _tool(raw, index)) is not None]
    _check_tool_choice(request.tool_choice)
    return ParsedResponses(request, items, raw_items, tools)


def _raw_items(value: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return value


def input_items(raw_items: list[dict[str, Any]]) -> list[InputItem]:
    return [_item(raw, index) for index, raw in enumerate(raw_items)]


def _item(raw: dict[str, Any], index: int) -> InputItem:
    kind = raw.get("type", "message")
    model = ITEM_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        known = ", ".join(ITEM_MODELS)
        raise GatewayError(
            400, f"Invalid request: 'input[{index}].type' {kind!r} is not supported here ({known} are).",
            param=f"input[{index}].type",
        )  # fmt: skip
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise invalid_request(exc, ("input", index)) from None


def _tool(raw: dict[str, Any], index: int) -> FunctionTool | None:
    """A function tool; None for `tool_search` (toolsift searches anyway); a 400 for hosted tools."""
    kind = raw.get("type")
    if kind == SEARCH_TOOL:
        return None
    if kind in HOSTED_TOOLS:
        raise GatewayError(
            400,
            f"The hosted tool '{kind}' is not supported by this gateway: it serves function tools and its own MCP "
            "tools (found through search). Remove it from 'tools'.",
            param=f"tools[{index}].type",
            code="unsupported_tool",
        )
    if kind != "function":
        raise GatewayError(
            400, f"Invalid request: 'tools[{index}].type' {kind!r} is not supported (use 'function').",
            param=f"tools[{index}].type", code="unsupported_tool",
        )  # fmt: skip
    try:
        return FunctionTool.model_validate(raw)
    except ValidationError as exc:
        raise invalid_request(exc, ("tools", index)) from None


def _check_tool_choice(choice: str | dict[str, Any] | None) -> None:
    if not isinstance(choice, dict):
        return
    if choice.get("type") != "function" or not isinstance(choice.get("name"), str):
        raise GatewayError(
            400,
            "Invalid request: 'tool_choice' must be 'auto', 'none', 'required' or "
            '{"type": "function", "name": "..."} here.',
            param="tool_choice",
        )
