"""What an OpenAI-compatible upstream's answers must look like before the codec reads them: completions and stream
chunks. Only the fields the gateway reads are modelled; the original dict goes on, not the model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr


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
