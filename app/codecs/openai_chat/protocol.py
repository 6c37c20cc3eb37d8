"""OpenAI chat completions as it travels: the request as a client sends it, the answers (completions and stream
chunks) an OpenAI-compatible upstream gives, and the field names both sides share.

Only what the gateway reads is modelled; every other field is allowed and passed on untouched, so new OpenAI
parameters work without a release. An answer's model is a check of its shape: the original dict goes on. Logic
lives in `requests` and `answers`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

from app.codecs import TOOL_NAME_PATTERN

REASONING_FIELDS = ("reasoning_content", "reasoning")  # the names OpenAI-compatible upstreams give reasoning


def reasoning_field_of(field: str | None) -> str:
    """The field reasoning goes in: the upstream's own name for it, else the first of the names upstreams use."""
    return field if field in REASONING_FIELDS else REASONING_FIELDS[0]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionDefinition(_Open):
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolDefinition(_Open):
    type: Literal["function"]
    function: FunctionDefinition
    defer_loading: StrictBool = False


class ToolCallFunction(_Open):
    name: str
    arguments: str


class ToolCall(_Open):
    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction


class Message(_Open):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @field_validator("content")
    @classmethod
    def _parts(cls, value: str | list[dict[str, Any]] | None) -> str | list[dict[str, Any]] | None:
        """The parts the gateway and its translators read: `text` is text, `image_url` an object with a `url`."""
        for index, part in enumerate(value if isinstance(value, list) else ()):
            if "text" in part and not isinstance(part["text"], str):
                raise ValueError(f"part {index}: 'text' must be a string")
            image = part.get("image_url")
            if image is not None and not (isinstance(image, dict) and isinstance(image.get("url"), str)):
                raise ValueError(f"part {index}: 'image_url' must be an object with a string 'url'")
        return value

    @field_validator("tool_call_id")
    @classmethod
    def _non_empty(cls, value: str | None) -> str | None:
        if value is not None and not value:
            raise ValueError("must not be empty")
        return value


class StreamOptions(_Open):
    include_usage: StrictBool | None = None


class ChatCompletionRequest(_Open):
    """Typed are the fields the gateway, or a translator to another provider, reads; the rest passes through."""

    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    tools: list[ToolDefinition] | None = None
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    n: StrictInt | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: StrictBool | None = None
    stop: str | list[str] | None = None
    tool_set: str | None = None
    session_id: str | None = Field(None, min_length=1)  # capped by `max_session_id_chars`, as the header is

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int | None) -> int | None:
        if value is not None and value != 1:
            raise ValueError("must be 1: the gateway runs its tool loop for a single choice")
        return value

    @field_validator("tool_choice")
    @classmethod
    def _named_function(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if isinstance(value, dict) and value.get("type") == "function":
            function = value.get("function")
            if not (isinstance(function, dict) and isinstance(function.get("name"), str)):
                raise ValueError("of type 'function' needs 'function': {\"name\": \"...\"}")
        return value
