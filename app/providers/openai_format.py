"""The engine's model <-> OpenAI chat completions as an upstream speaks it. Pure functions, no I/O.

Messages a client sent in this format go back exactly as sent (`native`); those the loop made are written from
their typed fields. Answers are read only after `answers.py` checked their shape.
"""

from __future__ import annotations

from typing import Any

from app.core.model import (
    CallFragment,
    Delta,
    JsonObject,
    Message,
    Native,
    Part,
    ResponseMeta,
    ToolSpec,
    UpstreamRequest,
    Usage,
)

REASONING_FIELDS = ("reasoning_content", "reasoning")
MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", "tool_call_id", "function_call", *REASONING_FIELDS})
RESENT_FIELDS = ("reasoning_details",)  # an upstream's own fields of an assistant turn it wants back next round
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
META_FIELDS = frozenset({"id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier"})


def to_openai(request: UpstreamRequest) -> JsonObject:
    """The round as a chat-completions body."""
    options = request.options
    body: JsonObject = {**options.params, "model": request.model}
    if not request.stream:
        body.pop("stream_options", None)
    body["messages"] = [message_to_openai(message) for message in request.messages]
    if request.tools:
        body["tools"] = [tool_to_openai(tool) for tool in request.tools]
    if options.tool_choice is not None:
        body["tool_choice"] = options.tool_choice
    if options.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.stop is not None:
        body["stop"] = options.stop
    if request.stream:
        body["stream"] = True
    return body


def tool_to_openai(tool: ToolSpec) -> JsonObject:
    if tool.openai is not None:
        return tool.openai
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def message_to_openai(message: Message) -> JsonObject:
    if message.native is not None and message.native.format == "openai":
        return message.native.value
    wire: JsonObject = {"role": message.role, "content": _content(message.content)}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    if message.reasoning is not None:
        wire[message.reasoning_field] = message.reasoning
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


def usage_from_openai(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    return Usage(
        prompt_tokens=usage.get("prompt_tokens") or 0,
        completion_tokens=usage.get("completion_tokens") or 0,
        total_tokens=usage.get("total_tokens") or 0,
        extra={key: value for key, value in usage.items() if key not in USAGE_FIELDS},
    )


def _meta(answer: JsonObject) -> ResponseMeta:
    fingerprint, tier = answer.get("system_fingerprint"), answer.get("service_tier")
    others = {key: value for key, value in answer.items() if key not in META_FIELDS and key != "tool_discovery"}
    return ResponseMeta(
        id=str(answer.get("id") or ""),
        model=str(answer.get("model") or ""),
        created=answer["created"] if isinstance(answer.get("created"), int) else 0,
        system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        service_tier=tier if isinstance(tier, str) else None,
        extra=Native("openai", others) if others else None,
    )


def delta_from_completion(completion: JsonObject) -> Delta:
    """A whole (checked) chat completion as one delta."""
    choice = completion["choices"][0]
    message = choice.get("message") or {}
    reasoning_field = next((key for key in REASONING_FIELDS if isinstance(message.get(key), str)), REASONING_FIELDS[0])
    others = {key: value for key, value in message.items() if key not in MESSAGE_FIELDS}
    content = message.get("content")
    return Delta(
        content=content if isinstance(content, str) else "",
        reasoning=message.get(reasoning_field) or "",
        reasoning_field=reasoning_field,
        calls=[_fragment(index, call) for index, call in enumerate(message.get("tool_calls") or ())],
        finish_reason=choice.get("finish_reason"),
        usage=usage_from_openai(completion.get("usage")),
        logprobs=choice.get("logprobs") if isinstance(choice.get("logprobs"), dict) else None,
        meta=_meta(completion),
        extra=Native("openai", others) if others else None,
    )


def delta_from_chunk(chunk: JsonObject) -> Delta:
    """One (checked) stream chunk as a delta; choices other than index 0 are ignored (the gateway asks for one)."""
    delta = Delta(usage=usage_from_openai(chunk.get("usage")), meta=_meta(chunk))
    for choice in chunk.get("choices") or ():
        if choice.get("index", 0) != 0:
            continue
        wire = choice.get("delta") or {}
        if isinstance(wire.get("content"), str):
            delta.content = wire["content"]
        for key in REASONING_FIELDS:
            if isinstance(wire.get(key), str) and wire[key]:
                delta.reasoning, delta.reasoning_field = wire[key], key
        for position, fragment in enumerate(wire.get("tool_calls") or ()):
            delta.calls.append(_fragment(fragment.get("index", position), fragment))
        if choice.get("finish_reason"):
            delta.finish_reason = choice["finish_reason"]
        if isinstance(choice.get("logprobs"), dict):
            delta.logprobs = choice["logprobs"]
    return delta


def _fragment(index: int, call: JsonObject) -> CallFragment:
    function = call.get("function") or {}
    return CallFragment(index, call.get("id") or "", function.get("name") or "", function.get("arguments") or "")
