"""Anthropic answers <-> the engine's model: an upstream's message or stream events in, as deltas; the pieces of
an answer (stop reason, usage, thinking blocks, tool input, error type) out, for the Messages front.

Thinking becomes reasoning for every front, and each thinking block also goes on whole as it ends
(`reasoning_blocks`: a Messages client gets it signed); the whole content goes into `extra`, so the next round
sends it back unchanged. Each stream event is read once, after the provider checked its shape.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from app.codecs.anthropic.protocol import MESSAGE_FIELDS, STOP_KINDS, STOP_REASONS, THINKING, USAGE_FIELDS
from app.common.errors import GatewayError
from app.core.model import (
    CallFragment,
    Delta,
    JsonObject,
    Native,
    ResponseMeta,
    StopReason,
    ToolCall,
    Usage,
    reported_count,
)


def usage_in(usage: JsonObject | None) -> Usage | None:
    """Anthropic's usage as the engine's: the input counts every input token, the cache's reads and writes kept
    apart (Anthropic's `input_tokens` counts neither); its other fields (`cache_creation`, `server_tool_use`,
    `service_tier`, ...) kept for a Messages front."""
    if not usage:
        return None
    cache_read = int(usage.get("cache_read_input_tokens") or 0)
    cache_write = reported_count(usage.get("cache_creation_input_tokens")) or None  # a chat client sees writes only
    prompt = int(usage.get("input_tokens") or 0) + (cache_write or 0) + cache_read
    completion = int(usage.get("output_tokens") or 0)
    extra = {key: value for key, value in usage.items() if key not in USAGE_FIELDS or value is None}  # nulls too
    return Usage(
        prompt, completion, prompt + completion, cache_read_tokens=cache_read, cache_write_tokens=cache_write,
        extra={"anthropic": extra} if extra else {},
    )  # fmt: skip


def stop_in(stop_reason: object, sequence: object = None) -> StopReason | None:
    """A stop reason as the engine's, its word kept; the stop sequence only when that is why it ended."""
    if not isinstance(stop_reason, str) or not stop_reason:
        return None
    kind = STOP_KINDS.get(stop_reason, "other")
    said = sequence if kind == "stop_sequence" and isinstance(sequence, str) else None
    return StopReason(kind, said, "anthropic", stop_reason)


def _meta(message: JsonObject, created: int) -> ResponseMeta:
    """The message's id as it came (a front that shows another format's id makes its own), and its fields beyond
    the typed ones (`container`, `stop_details`, ...) for a Messages front."""
    others = {key: value for key, value in message.items() if key not in MESSAGE_FIELDS}
    meta = ResponseMeta(id=str(message.get("id") or ""), model=str(message.get("model") or ""), created=created)
    meta.extra = Native("anthropic", others) if others else None
    return meta


def meta_fields(meta: ResponseMeta | None) -> JsonObject:
    """An Anthropic upstream's own top-level fields of its message."""
    extra = meta.extra if meta is not None else None
    return dict(extra.value) if extra is not None and extra.format == "anthropic" else {}


def delta_from_message(message: JsonObject) -> Delta:
    """A whole (checked) message as one delta."""
    content = message.get("content") or []
    text = "".join(block.get("text", "") for block in content if block.get("type") == "text")
    thinking = "".join(block.get("thinking") or "" for block in content if block.get("type") == "thinking")
    calls = [
        CallFragment(index, block.get("id") or "", block.get("name") or "", json.dumps(block.get("input") or {}))
        for index, block in enumerate(block for block in content if block.get("type") == "tool_use")
    ]
    return Delta(
        content=text,
        reasoning=thinking,
        calls=calls,
        stop=stop_in(message.get("stop_reason"), message.get("stop_sequence")) or StopReason(),
        usage=usage_in(message.get("usage")),
        meta=_meta(message, int(time.time())),
        extra=Native("anthropic", {"content": content}),
        reasoning_blocks=[Native("anthropic", block) for block in content if block.get("type") in THINKING],
    )


@dataclass
class StreamDecoder:
    """A streamed answer's (checked) events as deltas, its content blocks assembled on the way as Anthropic would
    have sent them whole."""

    meta: ResponseMeta = field(default_factory=lambda: ResponseMeta(created=int(time.time())))
    usage: JsonObject = field(default_factory=dict)
    tool_index: dict[int, int] = field(default_factory=dict)  # block index -> the engine's tool-call index
    blocks: dict[int, JsonObject] = field(default_factory=dict)
    inputs: dict[int, str] = field(default_factory=dict)  # tool_use input JSON, in parts

    def deltas(self, event: JsonObject) -> list[Delta]:
        kind, index = event.get("type"), event.get("index")
        if kind == "message_start":
            message = event.get("message") or {}
            self.meta = _meta(message, self.meta.created)
            self.usage.update(message.get("usage") or {})
            return [Delta(meta=self.meta)]
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if isinstance(index, int):
                self.blocks[index] = dict(block)
            if block.get("type") == "tool_use":
                position = self.tool_index.setdefault(event.get("index", 0), len(self.tool_index))
                call = CallFragment(position, block.get("id") or "", block.get("name") or "")
                return [Delta(calls=[call], meta=self.meta)]
            return [Delta(content=block["text"], meta=self.meta)] if block.get("text") else []
        if kind == "content_block_delta":
            return self._delta(index, event.get("delta") or {})
        if kind == "content_block_stop":
            return self._stop(index)
        if kind == "message_delta":
            self.usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            said = event.get("delta") or {}
            others = {key: value for key, value in said.items() if key not in ("stop_reason", "stop_sequence")}
            if others:  # the end's own fields (`stop_details`, `container`), with the start's
                self.meta.extra = Native("anthropic", {**meta_fields(self.meta), **others})
            reason = said.get("stop_reason")
            if not reason:
                return []
            return [Delta(stop=stop_in(reason, said.get("stop_sequence")), meta=self.meta)]
        if kind == "message_stop":
            extra = Native("anthropic", {"content": [self.blocks[i] for i in sorted(self.blocks)]})
            usage = usage_in(self.usage)
            return [Delta(usage=usage, meta=self.meta, extra=extra) if usage else Delta(extra=extra)]
        if kind == "ping":
            return [Delta(keepalive=True)]
        return []  # event types added later

    def _delta(self, index: object, delta: JsonObject) -> list[Delta]:
        kind = delta.get("type")
        block = self.blocks.get(index) if isinstance(index, int) else None
        if kind == "text_delta":
            if block is not None:
                block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
            return [Delta(content=delta["text"], meta=self.meta)] if delta.get("text") else []
        if kind == "input_json_delta":
            part = delta.get("partial_json")
            if block is not None and isinstance(index, int):
                self.inputs[index] = self.inputs.get(index, "") + str(part or "")
            if part and index in self.tool_index:
                return [Delta(calls=[CallFragment(self.tool_index[index], arguments=part)], meta=self.meta)]
            return []
        if block is None:
            return []
        if kind == "thinking_delta":
            text = str(delta.get("thinking") or "")
            block["thinking"] = str(block.get("thinking") or "") + text
            return [Delta(reasoning=text)] if text else []
        if kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        return []

    def _stop(self, index: object) -> list[Delta]:
        if not isinstance(index, int) or index not in self.blocks:
            return []
        if index in self.inputs:
            try:
                value = json.loads(self.inputs.pop(index) or "{}")
            except ValueError:
                value = {}
            self.blocks[index]["input"] = value if isinstance(value, dict) else {}
            return []
        block = self.blocks[index]
        return [Delta(reasoning_blocks=[Native("anthropic", block)])] if block.get("type") in THINKING else []


def stop_reason(stop: StopReason) -> str:
    """The engine's stop reason as Anthropic's: an Anthropic upstream's own word as it came."""
    return stop.said_in("anthropic") or STOP_REASONS[stop.kind]


def usage_json(usage: Usage | None) -> JsonObject:
    """Usage in Anthropic's terms: the cache's reads and writes (as an upstream reported them) apart from the rest,
    and what an Anthropic upstream said more."""
    usage = usage or Usage()
    body: JsonObject = {
        "input_tokens": usage.uncached_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens or 0,
        "cache_read_input_tokens": usage.cache_read_tokens or 0,
    }
    for key, value in usage.extra_in("anthropic").items():
        if value is not None or not body.get(key):  # a count reported as null stays null, unless some were counted
            body[key] = value
    return body


def thinking_blocks(blocks: list[Native]) -> list[JsonObject]:
    """Reasoning blocks as an Anthropic upstream wrote them (thinking with its signature, redacted thinking)."""
    return [block.value for block in blocks if block.format == "anthropic" and block.value.get("type") in THINKING]


def tool_input(call: ToolCall) -> JsonObject:
    """The call's arguments as an object; arguments that are not a JSON object (a model's mistake) become `{}`."""
    value = call.parsed
    return value if isinstance(value, dict) else {}


def tool_use_json(call: ToolCall, upstream: JsonObject | None = None) -> JsonObject:
    """A client's tool call as a `tool_use` block: the upstream's own block's other fields (`caller`, ...) kept when
    an Anthropic upstream made this very call."""
    block = upstream_block(call, upstream)
    return {**block, "type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call)}


def upstream_block(call: ToolCall, upstream: JsonObject | None) -> JsonObject:
    """The `tool_use` block of `call` in an Anthropic upstream's content (`upstream`, a turn's `extra`), if any."""
    for block in (upstream or {}).get("content") or ():
        if block.get("type") == "tool_use" and (block.get("id"), block.get("name")) == (call.id, call.name):
            return dict(block)
    return {}


def text_blocks(text: str | None, upstream: JsonObject | None) -> list[JsonObject]:
    """An answer's text as blocks: an Anthropic upstream's own text blocks (with their citations) as they came when
    they are all of it, else one block (earlier rounds' text joined with the last's)."""
    if not text:
        return []
    said = [block for block in (upstream or {}).get("content") or () if block.get("type") == "text"]
    if "".join(str(block.get("text") or "") for block in said) == text:
        return said
    return [{"type": "text", "text": text}]


def error_type(error: GatewayError) -> str:
    """Anthropic's error type for an error: a specific one of Anthropic's the upstream gave, else by status."""
    if error.type in ANTHROPIC_ERROR_TYPES and error.type not in ("invalid_request_error", "api_error"):
        return error.type
    return STATUS_TYPES.get(error.status, "api_error" if error.status >= 500 else "invalid_request_error")


ANTHROPIC_ERROR_TYPES = frozenset(
    {"invalid_request_error", "authentication_error", "billing_error", "permission_error", "not_found_error",
     "request_too_large", "rate_limit_error", "timeout_error", "api_error", "overloaded_error"}
)  # fmt: skip
STATUS_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
    504: "timeout_error",
}
