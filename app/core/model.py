"""The typed model of a chat every layer speaks: requests, messages, tool calls, usage, what an upstream answers.

Every front converts its wire format to these types and back, and every provider converts them to its upstream's
format and back; nothing between those edges reads a wire dict. What only one wire format understands (an
OpenAI message's extra fields, Anthropic's thinking signatures or `cache_control`) travels in a `native` slot,
untouched, for the edge of the same format to use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

JsonObject = dict[str, Any]  # JSON the engine never reads: schemas, pass-through parameters, native payloads
Role = Literal["system", "developer", "user", "assistant", "tool", "function"]
WireFormat = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class Native:
    """A wire object as an edge received it, for an edge of the same format to send on unchanged."""

    format: WireFormat
    value: JsonObject


@dataclass(slots=True)
class Part:
    """One part of a message's content. `other` parts (audio, files, ...) are only in `native`."""

    kind: Literal["text", "image", "other"]
    text: str = ""
    url: str = ""
    native: JsonObject | None = None


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it (it may not be valid JSON)


@dataclass(slots=True)
class Message:
    role: Role
    content: str | list[Part] | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"  # the name an OpenAI-compatible upstream gave it
    native: Native | None = None  # the whole message as a front received it
    extra: Native | None = None  # an upstream's own fields of an answer it gave, beyond the typed ones

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return " ".join(part.text for part in self.content or () if part.kind == "text")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool definition as sent upstream; `openai` is its OpenAI form when one was already made (extra fields
    such as `strict` kept). `native` is the definition as a front of another format received it (an Anthropic
    tool with its `cache_control`), for an upstream of that format; the gateway's own fields (`defer_loading`)
    are already taken out."""

    name: str
    description: str
    parameters: JsonObject
    openai: JsonObject | None = None
    native: Native | None = None


@dataclass(slots=True)
class Usage:
    """Token counts; `extra` holds every other field an upstream reported (details, cost), summed alike."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    extra: JsonObject = field(default_factory=dict)

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.extra = _summed(self.extra, other.extra)


def _summed(total: JsonObject, more: JsonObject) -> JsonObject:
    """Numbers added field by field, nested objects too; other values keep the first one seen."""
    result = dict(total)
    for key, value in more.items():
        current = result.get(key)
        if isinstance(value, bool) or value is None:
            result.setdefault(key, value)
        elif isinstance(value, int | float) and isinstance(current, int | float) and not isinstance(current, bool):
            result[key] = current + value
        elif isinstance(value, dict):
            result[key] = _summed(current if isinstance(current, dict) else {}, value)
        elif key not in result:
            result[key] = value
    return result


@dataclass(slots=True)
class Options:
    """The request's generation parameters: those the engine or a translator reads, typed; the rest passed on
    under their OpenAI chat-completions names in `params`."""

    tool_choice: str | JsonObject | None = None
    parallel_tool_calls: bool | None = None
    stop: str | list[str] | None = None
    include_usage: bool = False
    params: JsonObject = field(default_factory=dict)
    native: Native | None = None  # parameters only an upstream of the front's format takes (Anthropic's `thinking`)


@dataclass(slots=True)
class ChatRequest:
    """What a front asks the engine for, whatever its wire format."""

    model: str
    messages: list[Message]
    tools: list[ClientTool]
    options: Options
    stream: bool = False
    tool_set: str | None = None
    session_id: str | None = None
    loaded_tools: list[str] = field(default_factory=list)  # what the conversation found before (a stored response)


@dataclass(frozen=True, slots=True)
class ClientTool:
    spec: ToolSpec
    deferred: bool = False


@dataclass(slots=True)
class UpstreamRequest:
    """One round as a provider sends it."""

    model: str
    messages: list[Message]
    tools: list[ToolSpec]
    options: Options
    stream: bool = False


@dataclass(slots=True)
class CallFragment:
    """A piece of a tool call as it streams: `index` says which call; id and name come once, arguments in parts."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(slots=True)
class ResponseMeta:
    """What an upstream says about its answer as a whole."""

    id: str = ""
    model: str = ""
    created: int = 0
    system_fingerprint: str | None = None
    service_tier: str | None = None
    extra: Native | None = None  # the upstream's other top-level fields, for a front of the same format


@dataclass(slots=True)
class Delta:
    """A piece of one round's answer. A plain (non-streamed) answer is one delta holding all of it."""

    content: str = ""
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    calls: list[CallFragment] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    logprobs: JsonObject | None = None
    meta: ResponseMeta | None = None
    extra: Native | None = None  # the upstream's own fields of the turn, sent back with it next round
    # Reasoning blocks whole as the upstream ended them (Anthropic's thinking with its signature, redacted
    # thinking), for a front of the same format; their text came as `reasoning` already.
    reasoning_blocks: list[Native] = field(default_factory=list)
