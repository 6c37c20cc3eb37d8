"""OpenAI chat-completions wire format: the request as a client sends it, validated.

Only what the gateway reads is modelled; every other field is allowed and passed to the upstream untouched,
so new OpenAI parameters work without a release. Logic lives elsewhere.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from app.errors import GatewayError
from app.fronts.wire import TOOL_NAME_PATTERN, check_counts, invalid_request, load_body

GATEWAY_FIELDS = ("tool_set", "session_id")


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


def parse_chat_request(
    raw_body: bytes, max_messages: int = 2000, max_tools: int = 512
) -> tuple[ChatCompletionRequest, dict[str, Any]]:
    """Decode and validate a request body; return the model and the raw dict for pass-through."""
    payload = load_body(raw_body)
    check_counts(payload, max_messages, max_tools)
    try:
        request = ChatCompletionRequest.model_validate(payload)
    except ValidationError as exc:
        raise invalid_request(exc) from None
    for index, message in enumerate(request.messages):
        if message.role == "tool" and message.tool_call_id is None:
            raise GatewayError(
                400,
                f"Invalid request: 'messages[{index}].tool_call_id' is required for role 'tool'.",
                param=f"messages[{index}].tool_call_id",
            )
    return request, payload
