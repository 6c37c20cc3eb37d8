"""Anthropic's Messages API as it travels: the request as Anthropic clients (Claude Code, the SDKs) send it, the
answers (messages and stream events) an Anthropic upstream gives, and the names both sides share.

Only what the gateway reads is modelled; every other field is allowed, and a content block keeps its whole dict
(thinking signatures, `cache_control`, `tool_reference`). An answer's model is a check of its shape: the original
dict goes on. Logic lives in `requests` and `answers`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator

from app.codecs import TOOL_NAME_PATTERN
from app.core.model import StopKind

THINKING = ("thinking", "redacted_thinking")  # reasoning blocks, kept whole: a thinking block's signature is checked
SYSTEM_ROLES = ("system", "developer")  # the engine's roles that become Anthropic's `system`
BETA_HEADER = "anthropic-beta"  # the beta features a request uses: forwarded to an Anthropic upstream only
# Stop reasons as neutral kinds; a word not here is `other`, and the word itself goes back to a Messages client.
STOP_KINDS: dict[str, StopKind] = {
    "end_turn": "end", "stop_sequence": "stop_sequence", "pause_turn": "pause", "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens", "tool_use": "tool_calls", "refusal": "refused",
}  # fmt: skip
STOP_REASONS: dict[StopKind, str] = {
    "end": "end_turn", "stop_sequence": "stop_sequence", "pause": "pause_turn", "max_tokens": "max_tokens",
    "tool_calls": "tool_use", "refused": "refusal", "other": "end_turn",
}  # fmt: skip
MESSAGE_FIELDS = frozenset({"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"})
USAGE_FIELDS = frozenset({"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"})
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
    role: Literal["user", "assistant", "system"]  # `system`: an instruction mid-conversation (Claude Code sends them)
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


class AnthropicUsage(_Open):
    input_tokens: StrictInt | None = None
    output_tokens: StrictInt | None = None
    cache_read_input_tokens: StrictInt | None = None
    cache_creation_input_tokens: StrictInt | None = None


class AnthropicBlock(_Open):
    type: StrictStr
    text: StrictStr = ""
    id: StrictStr | None = None
    name: StrictStr | None = None
    input: dict[str, Any] | None = None


class AnthropicMessage(_Open):
    type: StrictStr | None = None
    id: StrictStr | None = None
    model: StrictStr | None = None
    content: list[AnthropicBlock] | None = None
    stop_reason: StrictStr | None = None
    usage: AnthropicUsage | None = None


class AnthropicDelta(_Open):
    type: StrictStr | None = None
    text: StrictStr | None = None
    partial_json: StrictStr | None = None
    stop_reason: StrictStr | None = None


class AnthropicEvent(_Open):
    type: StrictStr
    index: StrictInt | None = None
    message: AnthropicMessage | None = None
    content_block: AnthropicBlock | None = None
    delta: AnthropicDelta | None = None
    usage: AnthropicUsage | None = None
