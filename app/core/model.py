"""The typed model of a chat every layer speaks: requests, messages, tool calls, usage, what an upstream answers.

Every front converts its wire format to these types and back, and every provider converts them to its upstream's
format and back; nothing between those edges reads a wire dict. What only one wire format understands (an
OpenAI message's extra fields, Anthropic's thinking signatures or `cache_control`) travels in a `native` slot,
untouched, for the edge of the same format to use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

JsonObject = dict[str, Any]  # JSON the engine never reads: schemas, pass-through parameters, native payloads
Role = Literal["system", "developer", "user", "assistant", "tool", "function"]
WireFormat = Literal["openai", "anthropic", "responses"]
ToolType = Literal["function", "custom", "local_shell", "tool_search"]


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
    """A call of a tool. `arguments` is the JSON text as the model wrote it, passed on unchanged (it may not be valid
    JSON); `parsed` is that text read once, for code that looks inside."""

    id: str
    name: str
    arguments: str

    @property
    def parsed(self) -> Any:
        """The arguments as a JSON value (no text at all is `{}`, a call without arguments), or None when they are
        not valid JSON."""
        return parsed_json(self.arguments or "{}")


def parsed_json(text: str) -> Any:
    """`text` as a JSON value, or None when it is not JSON (or nested too deep to read)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


@dataclass(slots=True)
class Message:
    role: Role
    content: str | list[Part] | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    reasoning: str | None = None
    reasoning_field: str | None = None  # the upstream's own name for it, for an edge of its format (None: the default)
    native: Native | None = None  # the whole message as a front received it
    extra: Native | None = None  # an upstream's own fields of an answer it gave, beyond the typed ones
    loads: list[str] = field(default_factory=list)  # a tool result's deferred tools, which the upstream loads here

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return " ".join(part.text for part in self.content or () if part.kind == "text")


@dataclass(frozen=True, slots=True)
class Namespace:
    """A named group of client tools (a Responses `namespace` tool): an upstream without namespaces sees its
    functions as `{namespace}__{name}`, one of the same format gets the group back."""

    name: str
    description: str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool definition as sent upstream, in no wire format's shape. `strict` asks for arguments that match
    `parameters` exactly. `native` is the definition as a front received it (a chat tool with its extra fields, an
    Anthropic tool with its `cache_control`, a Responses tool of any client-executed type), for an upstream of the
    same format; the gateway's own fields (`defer_loading`) are already taken out. `wire` keeps each codec's form
    of it, made the first time it is sent, since a catalog's tools are sent every round of every request.

    `kind` says how the client runs it: a `function` takes JSON arguments; the others are Responses tool types a
    client executes, which an upstream that lacks them gets as a function with `parameters` (a `custom` tool's
    freeform text as `{"input": ...}`, `local_shell` its exec action, a client `tool_search` its query). Their calls
    travel in that form (`ToolCall.arguments`) between the edges. `namespace` is the group a function came in."""

    name: str
    description: str
    parameters: JsonObject
    strict: bool | None = None
    native: Native | None = None
    kind: ToolType = "function"
    namespace: Namespace | None = None
    wire: dict[WireFormat, JsonObject] = field(default_factory=dict, compare=False, repr=False)


@dataclass(slots=True)
class Usage:
    """Token counts, in no wire format's names.

    `input_tokens` counts every input token; the cache's share of them is typed apart, since it is billed apart:
    `cache_read_tokens` read from the upstream's prompt cache (about 0.1x), `cache_write_tokens` written to it
    (Anthropic's 1.25x). `reasoning_tokens` is the share of `output_tokens` the model spent thinking. None is "not
    reported", so a front shows what the upstream showed. `extra` holds every other field an upstream reported
    (details, cost, a service tier), by the wire format it came in, for a front of that format; summed alike.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    extra: dict[WireFormat, JsonObject] = field(default_factory=dict)

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens
        self.cache_read_tokens = _plus(self.cache_read_tokens, other.cache_read_tokens)
        self.cache_write_tokens = _plus(self.cache_write_tokens, other.cache_write_tokens)
        self.reasoning_tokens = _plus(self.reasoning_tokens, other.reasoning_tokens)
        for wire, values in other.extra.items():
            self.extra[wire] = _summed(self.extra.get(wire, {}), values)

    def extra_in(self, wire: WireFormat) -> JsonObject:
        return self.extra.get(wire, {})

    @property
    def uncached_tokens(self) -> int:
        """Input tokens neither read from nor written to the cache."""
        return max(self.input_tokens - (self.cache_read_tokens or 0) - (self.cache_write_tokens or 0), 0)


def _plus(total: int | None, more: int | None) -> int | None:
    return total if more is None else (total or 0) + more


def reported_count(value: object) -> int | None:
    """An upstream's token count, or None when it gave none (or not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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


ChoiceMode = Literal["auto", "none", "required", "tool"]


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """Which tools the model may call: `auto`, `none`, `required` (some tool), or `tool` (the one named)."""

    mode: ChoiceMode
    name: str = ""


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """The shape the answer must take: plain text, any JSON object, or JSON matching `schema` (named `name`)."""

    kind: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    schema: JsonObject | None = None
    description: str | None = None
    strict: bool | None = None


@dataclass(frozen=True, slots=True)
class Reasoning:
    """How much the model may think: an effort level (`low`, `medium`, ...) and/or a token budget; `summary`, the
    summary of it the client asked for (`auto`, `concise`, `detailed`), for an upstream that writes one."""

    effort: str | None = None
    budget_tokens: int | None = None
    summary: str | None = None


@dataclass(slots=True)
class Options:
    """The request's generation parameters, typed in no wire format's names; each codec maps its own names onto
    them and back. `params` holds what no typed field covers, by the wire format it came in, for an upstream of
    that same format only (another format would not know it), passed on unchanged; `headers` likewise holds the
    request headers that go with them (Anthropic's `anthropic-beta`, which enables some of those fields)."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: str | list[str] | None = None
    response_format: ResponseFormat | None = None
    reasoning: Reasoning | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = None
    include_usage: bool = False
    params: dict[WireFormat, JsonObject] = field(default_factory=dict)
    headers: dict[WireFormat, dict[str, str]] = field(default_factory=dict)


TYPED_OPTIONS = (
    "max_tokens", "temperature", "top_p", "stop", "response_format", "reasoning", "tool_choice",
    "parallel_tool_calls", "user",
)  # fmt: skip


def with_defaults(options: Options, defaults: Options | None) -> Options:
    """`options` with what they leave unset taken from `defaults` (a model alias's configured parameters); the
    request's own pass-through parameters win over the defaults' of the same format."""
    if defaults is None:
        return options
    merged = Options(include_usage=options.include_usage, headers=options.headers)
    for name in TYPED_OPTIONS:
        value = getattr(options, name)
        setattr(merged, name, value if value is not None else getattr(defaults, name))
    merged.params = dict(options.params)
    for wire, values in defaults.params.items():
        merged.params[wire] = {**values, **options.params.get(wire, {})}
    return merged


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
    hosted_tools: list[HostedTool] = field(default_factory=list)
    compact: bool = False  # answer with a summary of the conversation that can stand in for it (a compaction)


@dataclass(frozen=True, slots=True)
class ClientTool:
    spec: ToolSpec
    deferred: bool = False


@dataclass(frozen=True, slots=True)
class HostedTool:
    """A tool the upstream runs itself (web search, code interpreter, ...), as the client sent it (`native`): only
    an upstream of that format that serves `type` can take it; the gateway leaves it out for the others, or refuses
    the request (the provider's `unsupported_hosted_tools`). `where` is its place in the request, for errors."""

    type: str
    native: Native
    where: str = ""


@dataclass(slots=True)
class UpstreamRequest:
    """One round as a provider sends it."""

    model: str
    messages: list[Message]
    tools: list[ToolSpec]
    options: Options
    stream: bool = False
    hosted_tools: list[HostedTool] = field(default_factory=list)  # only those the provider serves
    # Tools the upstream defers itself (the `native` deferral): sent with `defer_loading`, or kept for the tool
    # search outputs that load them, and loaded where a tool result names them (`Message.loads`).
    deferred: list[ToolSpec] = field(default_factory=list)
    compact: bool = False  # the upstream compacts the conversation itself (a Responses `compaction_trigger`)


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


StopKind = Literal["end", "max_tokens", "tool_calls", "stop_sequence", "refused", "pause", "other"]


@dataclass(frozen=True, slots=True)
class StopReason:
    """Why an answer ended, in no wire format's words: it ended (`end`), ran out of tokens (`max_tokens`), calls
    tools (`tool_calls`), met a stop sequence (`stop_sequence`, with the `sequence` when the upstream said which),
    was refused or filtered (`refused`), paused a long turn to be continued (`pause`), or something no kind names
    (`other`). `raw` is the upstream's own word for it in `format`, so a front of that format says exactly that
    (one kind can have several words in a format, and `other` has only its word)."""

    kind: StopKind = "end"
    sequence: str | None = None
    format: WireFormat | None = None
    raw: str = ""

    def said_in(self, wire: WireFormat) -> str | None:
        """The upstream's own word, when it spoke `wire`."""
        return self.raw if self.format == wire and self.raw else None


@dataclass(slots=True)
class Delta:
    """A piece of one round's answer. A plain (non-streamed) answer is one delta holding all of it."""

    content: str = ""
    refusal: str = ""  # the model's refusal, streamed apart from its text (a chat upstream's `refusal`)
    reasoning: str = ""
    reasoning_field: str | None = None  # as in `Message`
    reasoning_summary: bool = False  # `reasoning` is a summary of the model's thinking (a Responses upstream's)
    calls: list[CallFragment] = field(default_factory=list)
    stop: StopReason | None = None  # why the round ended, in the delta that says so
    usage: Usage | None = None
    logprobs: JsonObject | None = None
    meta: ResponseMeta | None = None
    extra: Native | None = None  # the upstream's own fields of the turn, sent back with it next round
    # Reasoning blocks whole as the upstream ended them (Anthropic's thinking with its signature, redacted
    # thinking, a Responses upstream's reasoning item with its `encrypted_content`), for a front of the same
    # format; their text came as `reasoning` already.
    reasoning_blocks: list[Native] = field(default_factory=list)
    keepalive: bool = False  # only a sign of life (Anthropic's `ping`), passed on to a stream's client
    # Calls of hosted tools the upstream ran itself (a Responses upstream's `web_search_call`, ...), whole as they
    # ended, for a front of the same format: the client sees what the model did and passes them back.
    hosted_calls: list[Native] = field(default_factory=list)
