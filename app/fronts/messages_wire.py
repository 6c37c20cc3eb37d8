"""Anthropic Messages wire format: the request as Anthropic clients (Claude Code, the SDKs) send it, validated.

Only what the gateway reads is modelled; every other field is allowed, and a content block keeps its whole dict
for an Anthropic upstream (thinking signatures, `cache_control`, `tool_reference`). Logic lives elsewhere.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from app.errors import GatewayError
from app.fronts.wire import TOOL_NAME_PATTERN, check_counts, invalid_request, load_body

TOOL_CHOICES = ("auto", "any", "tool", "none")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


def _check_block(index: int, block: dict[str, Any]) -> None:
    """The fields of a content block the gateway reads; other block types pass through as they are."""
    kind = block.get("type")
    where = f"block {index}"
    if not isinstance(kind, str):
        raise ValueError(f"{where}: 'type' must be a string")
    if kind == "text" and not isinstance(block.get("text"), str):
        raise ValueError(f"{where}: 'text' must be a string")
    if kind in ("thinking", "redacted_thinking") and not isinstance(block.get("thinking", ""), str):
        raise ValueError(f"{where}: 'thinking' must be a string")
    if kind == "tool_use":
        if not (isinstance(block.get("id"), str) and isinstance(block.get("name"), str)):
            raise ValueError(f"{where}: a tool_use block needs string 'id' and 'name'")
        if not isinstance(block.get("input", {}), dict):
            raise ValueError(f"{where}: 'input' must be an object")
    if kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str) or not block["tool_use_id"]:
            raise ValueError(f"{where}: a tool_result block needs a string 'tool_use_id'")
        content = block.get("content")
        if content is not None and not isinstance(content, str | list):
            raise ValueError(f"{where}: 'content' must be a string or a list of blocks")
    if kind == "image" and not isinstance(block.get("source"), dict):
        raise ValueError(f"{where}: an image block needs a 'source' object")


class MessageParam(_Open):
    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]

    @field_validator("content")
    @classmethod
    def _blocks(cls, value: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        for index, block in enumerate(value if isinstance(value, list) else ()):
            _check_block(index, block)
        return value


class ToolParam(_Open):
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    input_schema: dict[str, Any]
    type: Literal["custom"] | None = None
    defer_loading: StrictBool = False


class MessagesRequest(_Open):
    """Typed are the fields the gateway, or a translator to another provider, reads; the rest passes through."""

    model: str = Field(min_length=1)
    max_tokens: StrictInt = Field(ge=1)
    messages: list[MessageParam] = Field(min_length=1)
    system: str | list[dict[str, Any]] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: dict[str, Any] | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: StrictInt | None = None
    thinking: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    stream: StrictBool = False
    tool_set: str | None = None
    session_id: str | None = Field(None, min_length=1)

    @field_validator("system")
    @classmethod
    def _system_blocks(cls, value: str | list[dict[str, Any]] | None) -> str | list[dict[str, Any]] | None:
        for index, block in enumerate(value if isinstance(value, list) else ()):
            if block.get("type") != "text" or not isinstance(block.get("text"), str):
                raise ValueError(f"block {index}: system blocks must be text blocks with a string 'text'")
        return value

    @field_validator("tool_choice")
    @classmethod
    def _choice(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            if value.get("type") not in TOOL_CHOICES:
                raise ValueError(f"'type' must be one of {', '.join(TOOL_CHOICES)}")
            if value["type"] == "tool" and not isinstance(value.get("name"), str):
                raise ValueError("of type 'tool' needs a string 'name'")
        return value


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
