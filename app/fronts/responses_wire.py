"""OpenAI Responses API wire format: the request as a client sends it, validated.

Typed are the fields the gateway reads or translates; what an OpenAI-compatible chat upstream cannot take (hosted
tools, server-side conversations, background runs, stored prompts) is refused with a 400 naming it, rather than
dropped: a client must not believe a tool ran that never did. Logic lives in app/fronts/responses.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator

from app.errors import GatewayError
from app.fronts.wire import TOOL_NAME_PATTERN, invalid_request, load_body

HOSTED_TOOLS = frozenset(
    {
        "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11",
        "file_search", "code_interpreter", "computer", "computer_use", "computer_use_preview", "image_generation",
        "mcp", "local_shell", "shell", "apply_patch", "custom",
    }
)  # fmt: skip
SEARCH_TOOL = "tool_search"  # served by toolsift's own search, whatever the upstream


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionTool(_Open):
    type: Literal["function"]
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: StrictBool | None = None
    defer_loading: StrictBool = False


class TextFormat(_Open):
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    description: str | None = None
    strict: StrictBool | None = None

    @model_validator(mode="after")
    def _schema_named(self) -> TextFormat:
        if self.type == "json_schema" and (self.name is None or self.json_schema is None):
            raise ValueError("of type 'json_schema' needs a 'name' and a 'schema'")
        return self


class TextConfig(_Open):
    format: TextFormat | None = None


class ReasoningConfig(_Open):
    effort: str | None = None


class MessageItem(_Open):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[dict[str, Any]]


class FunctionCallItem(_Open):
    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str
    id: str | None = None


class FunctionCallOutputItem(_Open):
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: str | list[dict[str, Any]]


class ReasoningItem(_Open):
    type: Literal["reasoning"]
    id: str | None = None
    summary: list[dict[str, Any]] = Field(default_factory=list)
    content: list[dict[str, Any]] | None = None


InputItem = MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem
ITEM_MODELS: dict[str, type[InputItem]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "function_call_output": FunctionCallOutputItem,
    "reasoning": ReasoningItem,
}


class ResponsesRequest(_Open):
    model: str = Field(min_length=1)
    input: str | list[dict[str, Any]] | None = None
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: StrictBool | None = None
    max_output_tokens: StrictInt | None = Field(None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    metadata: dict[str, str] | None = None
    text: TextConfig | None = None
    reasoning: ReasoningConfig | None = None
    stream: StrictBool = False
    store: StrictBool | None = None
    previous_response_id: str | None = Field(None, min_length=1)
    user: str | None = None
    background: StrictBool | None = None
    tool_set: str | None = None
    session_id: str | None = Field(None, min_length=1)


@dataclass
class ParsedResponses:
    """A validated request: its fields, its input as typed items (`raw_items` as sent), its function tools."""

    request: ResponsesRequest
    items: list[InputItem]
    raw_items: list[dict[str, Any]]
    tools: list[FunctionTool]


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
