"""OpenAI Responses API requests as they arrive: the body parsed and validated into the codec's protocol types.

Tools the client runs itself are validated by type; any other type is a hosted tool, which the engine passes to an
upstream that runs it or leaves out, saying so (or refuses, per provider). Server-side conversations, background
runs and stored prompts are refused with a 400 naming them. Logic lives in app/fronts/responses/front.py and the
Responses codec.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from app.codecs.responses.protocol import (
    CLIENT_TOOL_MODELS,
    ITEM_MODELS,
    SEARCH_TOOL,
    AdditionalToolsItem,
    ClientToolDefinition,
    InputItem,
    NamespaceTool,
    ParsedResponses,
    ResponsesRequest,
    ToolSearchOutputItem,
)
from app.common.errors import GatewayError
from app.fronts.wire import invalid_request, load_body, param_path

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
    tools: list[ClientToolDefinition] = []
    hosted: list[tuple[dict[str, Any], int]] = []
    for index, raw in enumerate(request.tools or ()):
        found = tool_definition(raw, ("tools", index))
        if isinstance(found, dict):
            hosted.append((found, index))
        elif found is not None:
            tools.append(found)
    count = sum(len(tool.tools) if isinstance(tool, NamespaceTool) else 1 for tool in tools)
    if count > max_tools:  # a namespace's functions count one each
        raise GatewayError(400, f"Too many tools: {count} (this gateway accepts at most {max_tools}).", param="tools")
    _check_tool_choice(request.tool_choice)
    return ParsedResponses(request, items, raw_items, tools, hosted, loaded_tools(items))


def loaded_tools(items: list[InputItem]) -> list[ClientToolDefinition]:
    """The tools the conversation's tool searches returned (and a developer added): callable from there on."""
    loaded: list[ClientToolDefinition] = []
    for index, item in enumerate(items):
        if isinstance(item, ToolSearchOutputItem | AdditionalToolsItem):
            for number, raw in enumerate(item.tools):
                found = tool_definition(raw, ("input", index, "tools", number))
                if found is not None and not isinstance(found, dict):
                    loaded.append(found)
    return loaded


def _raw_items(value: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return value


def input_items(raw_items: list[dict[str, Any]]) -> list[InputItem]:
    return [_item(raw, index) for index, raw in enumerate(raw_items)]


def _item(raw: dict[str, Any], index: int) -> InputItem:
    kind = raw.get("type", "message" if "role" in raw or "id" not in raw else "item_reference")
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


def tool_definition(raw: Any, where: tuple[str | int, ...]) -> ClientToolDefinition | dict[str, Any] | None:
    """A tool the client runs, validated; a hosted tool as it came (a dict); None for a `tool_search` that
    toolsift runs (it searches anyway)."""
    param = param_path(where)
    kind = raw.get("type") if isinstance(raw, dict) else None
    if not isinstance(kind, str):
        raise GatewayError(400, f"Invalid request: '{param}.type' must be a tool type.", param=f"{param}.type")
    if kind == SEARCH_TOOL and raw.get("execution") != "client":
        return None
    model = CLIENT_TOOL_MODELS.get(kind)
    if model is None:
        return dict(raw)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise invalid_request(exc, where) from None


def _check_tool_choice(choice: str | dict[str, Any] | None) -> None:
    if not isinstance(choice, dict):
        return
    if choice.get("type") not in ("function", "custom") or not isinstance(choice.get("name"), str):
        raise GatewayError(
            400,
            "Invalid request: 'tool_choice' must be 'auto', 'none', 'required' or "
            '{"type": "function" (or "custom"), "name": "..."} here.',
            param="tool_choice",
        )
