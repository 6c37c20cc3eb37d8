"""What an upstream's answer must look like before the gateway reads it: OpenAI completions and chunks,
Anthropic's answers are modelled in its codec (`app.codecs.anthropic.protocol`), checked alike.

A model's output is arbitrary and an upstream can send anything; the loop and the translation read these answers
as dicts, so each one is checked here, at the provider edge, once. Only the fields the gateway reads are
checked; everything else passes through untouched (the original dict goes on, not the model). A wrong shape
becomes a 502 `upstream_invalid_response` that names the field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


class TokenDetails(_Shape):
    cached_tokens: StrictInt | None = None
    reasoning_tokens: StrictInt | None = None


class Usage(_Shape):
    prompt_tokens: StrictInt | None = None
    completion_tokens: StrictInt | None = None
    total_tokens: StrictInt | None = None
    prompt_tokens_details: TokenDetails | None = None
    completion_tokens_details: TokenDetails | None = None


class Function(_Shape):
    name: StrictStr | None = None
    arguments: StrictStr | None = None


class ToolCall(_Shape):
    id: StrictStr | None = None
    type: StrictStr | None = None
    function: Function


class Message(_Shape):
    role: StrictStr | None = None
    content: StrictStr | list[Any] | None = None
    tool_calls: list[ToolCall] | None = None


class Choice(_Shape):
    index: StrictInt = 0
    message: Message
    finish_reason: StrictStr | None = None


class Completion(_Shape):
    id: StrictStr | None = None
    model: StrictStr | None = None
    choices: list[Choice] = Field(min_length=1)
    usage: Usage | None = None


class ToolCallDelta(_Shape):
    index: StrictInt = 0
    id: StrictStr | None = None
    type: StrictStr | None = None
    function: Function | None = None


class Delta(_Shape):
    role: StrictStr | None = None
    content: StrictStr | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(_Shape):
    index: StrictInt = 0
    delta: Delta | None = None
    finish_reason: StrictStr | None = None


class Chunk(_Shape):
    id: StrictStr | None = None
    model: StrictStr | None = None
    choices: list[ChunkChoice] | None = None
    usage: Usage | None = None


def problem(shape: type[BaseModel], answer: dict[str, Any]) -> str | None:
    """None when `answer` has `shape`, else what is wrong with it: the first few fields and why, never their
    values (an upstream's text stays out of error messages)."""
    try:
        shape.model_validate(answer)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        parts = [f"{'.'.join(str(p) for p in error['loc']) or 'the answer'}: {error['msg']}" for error in errors[:3]]
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return "; ".join(parts) + more
    return None
