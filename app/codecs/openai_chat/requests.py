"""OpenAI chat-completions requests <-> the engine's model: a client's request in, a round's body out to an
OpenAI-compatible upstream. Pure functions, no I/O.

A client's messages keep their wire dicts (`native`), so they go back upstream exactly as sent; those the loop made
are written from their typed fields. Parameters with no typed form (app.codecs.openai_chat.options) pass through
under their own names, to an OpenAI-compatible upstream only.
"""

from __future__ import annotations

from app.codecs.openai_chat.options import options_of, write_options
from app.codecs.openai_chat.protocol import REASONING_FIELDS, ChatCompletionRequest, reasoning_field_of
from app.core.model import (
    ChatRequest,
    ClientTool,
    JsonObject,
    Message,
    Native,
    Part,
    ToolCall,
    ToolSpec,
    UpstreamRequest,
)

REQUEST_FIELDS = frozenset({"model", "messages", "tools", "stream", "tool_set", "session_id"})  # read, never passed
RESENT_FIELDS = ("reasoning_details",)  # an upstream's own fields of an assistant turn it wants back next round


def chat_request(request: ChatCompletionRequest, payload: JsonObject) -> ChatRequest:
    """The validated request (`request`) and its raw body (`payload`) as the engine's request."""
    options = options_of(payload, REQUEST_FIELDS)
    options.include_usage = bool(request.stream_options and request.stream_options.include_usage)
    tools = [
        ClientTool(
            ToolSpec(
                tool.function.name,
                tool.function.description or "",
                tool.function.parameters or {"type": "object", "properties": {}},
                _strict(tool.function.model_extra),
                Native("openai", tool.model_dump(exclude_none=True, exclude={"defer_loading"})),
            ),
            deferred=tool.defer_loading,
        )
        for tool in request.tools or ()
    ]
    return ChatRequest(
        model=request.model,
        messages=[message_from_wire(raw) for raw in payload["messages"]],
        tools=tools,
        options=options,
        stream=request.stream,
        tool_set=request.tool_set,
        session_id=request.session_id,
    )


def _strict(extra: JsonObject | None) -> bool | None:
    strict = (extra or {}).get("strict")
    return strict if isinstance(strict, bool) else None


def message_from_wire(raw: JsonObject) -> Message:
    """A validated chat message (app.fronts.chat.wire checked the fields read here)."""
    content = raw.get("content")
    if isinstance(content, list):
        content = [_part(part) for part in content]
    reasoning_field = next((key for key in REASONING_FIELDS if isinstance(raw.get(key), str)), None)
    return Message(
        role=raw["role"],
        content=content,
        tool_calls=[
            ToolCall(str(call.get("id") or ""), call["function"]["name"], call["function"].get("arguments") or "")
            for call in raw.get("tool_calls") or ()
        ],
        tool_call_id=raw.get("tool_call_id"),
        reasoning=raw.get(reasoning_field) if reasoning_field else None,
        reasoning_field=reasoning_field,
        native=Native("openai", raw),
    )


def _part(part: JsonObject) -> Part:
    kind = part.get("type")
    if kind == "text":
        return Part("text", text=part.get("text") or "", native=part)
    if kind == "image_url":
        return Part("image", url=part["image_url"]["url"], native=part)
    return Part("other", native=part)


def to_openai(request: UpstreamRequest) -> JsonObject:
    """The round as a chat-completions body."""
    passed = request.options.params.get("openai")
    body: JsonObject = {**passed, "model": request.model} if passed else {"model": request.model}
    if not request.stream:
        body.pop("stream_options", None)
    deferred = {tool.name for tool in request.deferred}
    body["messages"] = [message_to_openai(message, deferred) for message in request.messages]
    if request.tools or request.deferred:
        body["tools"] = [tool_to_openai(tool) for tool in request.tools]
        body["tools"] += [{**tool_to_openai(tool), "defer_loading": True} for tool in request.deferred]
    write_options(body, request.options, request.stream)
    if request.stream:
        body["stream"] = True
    return body


def tool_to_openai(tool: ToolSpec) -> JsonObject:
    """The tool as a chat client sent it, or its chat form (made once per spec)."""
    if tool.native is not None and tool.native.format == "openai":
        return tool.native.value
    wire = tool.wire.get("openai")
    if wire is None:
        function: JsonObject = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        if tool.strict is not None:
            function["strict"] = tool.strict
        wire = tool.wire["openai"] = {"type": "function", "function": function}
    return wire


def message_to_openai(message: Message, deferred: frozenset[str] | set[str] = frozenset()) -> JsonObject:
    """`deferred`: the tools the upstream defers itself (the `native` deferral), which a tool result's
    `tool_reference` parts load, as on Anthropic's API."""
    if message.native is not None and message.native.format == "openai":
        return message.native.value
    wire: JsonObject = {"role": message.role, "content": _content(message.content)}
    references = [{"type": "tool_reference", "tool_name": name} for name in message.loads if name in deferred]
    if references:
        wire["content"] = [{"type": "text", "text": message.text()}, *references]
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    if message.reasoning is not None:
        wire[reasoning_field_of(message.reasoning_field)] = message.reasoning
    if message.extra is not None and message.extra.format == "openai":
        wire.update({key: message.extra.value[key] for key in RESENT_FIELDS if key in message.extra.value})
    return wire


def _content(content: str | list[Part] | None) -> str | list[JsonObject] | None:
    if not isinstance(content, list):
        return content
    parts: list[JsonObject] = []
    for part in content:
        if part.native is not None and part.native.get("type") in ("text", "image_url"):
            parts.append(part.native)
        elif part.kind == "text":
            parts.append({"type": "text", "text": part.text})
        elif part.kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": part.url}})
    return parts
