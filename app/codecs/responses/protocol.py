"""OpenAI's Responses API as it travels: the request as a client sends it, validated.

Typed are the fields the gateway reads or translates; every other field is allowed. Parsing (and refusing what an
OpenAI-compatible chat upstream cannot take) is the front's; logic lives in `items`, `requests` and `answers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from app.codecs import TOOL_NAME_PATTERN

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
