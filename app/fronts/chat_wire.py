"""OpenAI chat-completions wire format: the request as a client sends it, validated.

Only what the gateway reads is modelled; every other field is allowed and passed to the upstream untouched,
so new OpenAI parameters work without a release. Logic lives elsewhere.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from app import strict_json
from app.errors import GatewayError

TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
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
    for field_name, limit in (("messages", max_messages), ("tools", max_tools)):
        value = payload.get(field_name)
        if isinstance(value, list) and len(value) > limit:
            raise GatewayError(
                400, f"Too many {field_name}: {len(value)} (this gateway accepts at most {limit}).", param=field_name
            )
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


def load_body(raw_body: bytes) -> dict[str, Any]:
    """A request body as a JSON object (strictly parsed), or a 400 that says what is wrong with it."""
    try:
        payload = strict_json.loads(raw_body)
    except strict_json.JsonProblem as exc:
        where = f"'{exc.path}'" if exc.path else "the body"
        raise GatewayError(400, f"Invalid request: {where} {exc}.", param=exc.path, code="invalid_json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GatewayError(400, f"Request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(payload, dict):
        raise GatewayError(400, "Request body must be a JSON object.", code="invalid_body")
    return payload


def invalid_request(exc: ValidationError, prefix: tuple[int | str, ...] = ()) -> GatewayError:
    """A validation failure as a 400 naming its first problem's parameter (under `prefix`, for a nested part)."""
    first = exc.errors()[0]
    param = _param_path((*prefix, *first["loc"]))
    detail = re.sub(r" or instance of \w+", "", str(first["msg"]).removeprefix("Value error, "))
    if first["type"] == "missing":
        detail = "is required"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return GatewayError(400, f"Invalid request: '{param}' {detail}{more}.", param=param)


_UNION_TAGS = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})


def _param_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif "[" in part or part in _UNION_TAGS:
            continue
        else:
            path += f".{part}" if path else part
    return path or "body"
