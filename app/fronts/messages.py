"""Anthropic Messages <-> the engine's model: `POST /v1/messages` for Claude Code and the Anthropic SDKs.

Every message keeps its wire dict (`native`), so an Anthropic upstream gets thinking blocks with their
signatures, `cache_control` and `tool_reference` blocks back exactly as sent; an OpenAI-compatible upstream gets
the typed fields. One Anthropic user turn holding tool results becomes one engine `tool` message per result
(each keeping its own block), so the engine's loop reads them like any other. Errors are in Anthropic's shape,
`{"type": "error", "error": {"type", "message"}}`, with Anthropic's error types chosen by HTTP status.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from app import tokens
from app.core.model import ChatRequest, ClientTool, JsonObject, Message, Native, Options, Part, ToolCall, ToolSpec
from app.engine.answer import Answer
from app.engine.events import Event
from app.errors import GatewayError, anthropic_error_body
from app.fronts.base import Call, render_stream
from app.fronts.messages_stream import (
    PING,
    MessagesStream,
    stop_reason,
    thinking_blocks,
    tool_input,
    usage_json,
)
from app.fronts.messages_wire import MessagesRequest, parse_messages_request

TYPED_FIELDS = frozenset({"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stop_sequences"})
TYPED_FIELDS |= {"temperature", "top_p", "stream", "tool_set", "session_id", "metadata"}
GATEWAY_TOOL_FIELDS = frozenset({"defer_loading"})  # a tool's fields the gateway acts on and never sends upstream


def chat_request(request: MessagesRequest, payload: JsonObject) -> ChatRequest:
    """The validated request (`request`) and its raw body (`payload`) as the engine's request."""
    messages: list[Message] = []
    system = payload.get("system")
    if system:
        content: str | list[Part] = (
            system if isinstance(system, str) else [Part("text", text=block["text"]) for block in system]
        )
        messages.append(Message("system", content, native=Native("anthropic", {"role": "system", "content": system})))
    for raw in payload["messages"]:
        messages.extend(messages_from_wire(raw))
    tool_choice, parallel = _tool_choice(request.tool_choice)
    params: JsonObject = {"max_tokens": request.max_tokens}
    if request.stream:  # Anthropic streams always end with usage; an OpenAI-compatible upstream must be asked
        params["stream_options"] = {"include_usage": True}
    params.update({key: payload[key] for key in ("temperature", "top_p") if payload.get(key) is not None})
    user = (request.metadata or {}).get("user_id")
    if isinstance(user, str) and user:
        params["user"] = user
    native = {key: value for key, value in payload.items() if key not in TYPED_FIELDS}
    if request.metadata is not None:
        native["metadata"] = request.metadata
    options = Options(
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        stop=request.stop_sequences or None,
        include_usage=True,
        params=params,
        native=Native("anthropic", native) if native else None,
    )
    tools = [
        ClientTool(
            ToolSpec(tool.name, tool.description or "", tool.input_schema, native=_native_tool(raw)),
            deferred=tool.defer_loading,
        )
        for tool, raw in zip(request.tools or (), payload.get("tools") or (), strict=True)
    ]
    return ChatRequest(
        model=request.model,
        messages=messages,
        tools=tools,
        options=options,
        stream=request.stream,
        tool_set=request.tool_set,
        session_id=request.session_id,
    )


def _native_tool(raw: JsonObject) -> Native:
    """The tool as the client sent it, for an Anthropic upstream (`cache_control`, `strict`, `input_examples`,
    `eager_input_streaming`, ...), without what the gateway does itself: `defer_loading` is its deferral."""
    return Native("anthropic", {key: value for key, value in raw.items() if key not in GATEWAY_TOOL_FIELDS})


def _tool_choice(choice: JsonObject | None) -> tuple[str | JsonObject | None, bool | None]:
    """Anthropic's `tool_choice` in chat-completions terms, and its `disable_parallel_tool_use`."""
    if choice is None:
        return None, None
    parallel = False if choice.get("disable_parallel_tool_use") is True else None
    kind = choice["type"]
    if kind == "tool":
        return {"type": "function", "function": {"name": choice["name"]}}, parallel
    return {"auto": "auto", "any": "required", "none": "none"}[kind], parallel


def messages_from_wire(raw: JsonObject) -> list[Message]:
    """One (validated) Anthropic message as engine messages: an assistant turn stays one message; a user turn
    becomes a `tool` message per `tool_result` block and a user message for the blocks around them."""
    content = raw["content"]
    if isinstance(content, str):
        return [Message(raw["role"], content, native=Native("anthropic", raw))]
    if raw["role"] == "assistant":
        text = "".join(block["text"] for block in content if block["type"] == "text")
        thinking = "".join(block.get("thinking") or "" for block in content if block["type"] == "thinking")
        calls = [
            ToolCall(block["id"], block["name"], json.dumps(block.get("input") or {}))
            for block in content
            if block["type"] == "tool_use"
        ]
        return [Message("assistant", text or None, calls, reasoning=thinking or None, native=Native("anthropic", raw))]
    messages: list[Message] = []
    parts: list[Part] = []
    blocks: list[JsonObject] = []
    for block in content:
        if block["type"] == "tool_result":
            if blocks:
                messages.append(Message("user", parts, native=Native("anthropic", {"role": "user", "content": blocks})))
                parts, blocks = [], []
            native = Native("anthropic", {"role": "user", "content": [block]})
            messages.append(Message("tool", _result_text(block), tool_call_id=block["tool_use_id"], native=native))
        else:
            parts.append(_part(block))
            blocks.append(block)
    if blocks:
        messages.append(Message("user", parts, native=Native("anthropic", {"role": "user", "content": blocks})))
    return messages


def _part(block: JsonObject) -> Part:
    if block["type"] == "text":
        return Part("text", text=block["text"])
    if block["type"] == "image":
        source = block["source"]
        if source.get("type") == "base64":
            return Part("image", url=f"data:{source.get('media_type')};base64,{source.get('data')}")
        if isinstance(source.get("url"), str):
            return Part("image", url=source["url"])
    return Part("other", native=block)


def _result_text(block: JsonObject) -> str:
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    text = content or ""
    return f"Error: {text}" if block.get("is_error") is True else text


def message_json(answer: Answer, model: str) -> JsonObject:
    """A plain answer as an Anthropic `message`."""
    content = thinking_blocks(answer.reasoning_blocks)  # every round's, signed, as a stream gives them
    if not content and answer.reasoning:
        content.append({"type": "thinking", "thinking": answer.reasoning, "signature": ""})
    if answer.content:
        content.append({"type": "text", "text": answer.content})
    content.extend(tool_use_json(call) for call in answer.tool_calls)
    return {
        "id": _message_id(answer.meta.id),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(answer.finish_reason),
        "stop_sequence": None,
        "usage": usage_json(answer.usage),
        "tool_discovery": answer.discovery.as_json(),
    }


def tool_use_json(call: ToolCall) -> JsonObject:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call)}


def _message_id(upstream_id: str) -> str:
    return upstream_id if upstream_id.startswith("msg_") else f"msg_{uuid.uuid4().hex}"


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


def count_json(payload: JsonObject) -> JsonObject:
    """`count_tokens`: an estimate with the gateway's tokenizer (o200k_base, not Claude's), of the system prompt,
    messages and tools as sent."""
    counted: dict[str, Any] = {key: payload.get(key) for key in ("system", "messages", "tools") if payload.get(key)}
    text = json.dumps(counted, ensure_ascii=False, separators=(",", ":"))
    return {"input_tokens": tokens.count_text(text)}


class MessagesFront:
    """`POST /v1/messages` (and `count_tokens`)."""

    keepalive = PING

    def parse(self, body: bytes, call: Call) -> ChatRequest:
        return chat_request(*parse_messages_request(body, call.limits.max_messages, call.limits.max_tools))

    def count(self, body: bytes, call: Call) -> JsonObject:
        _, payload = parse_messages_request(body, call.limits.max_messages, call.limits.max_tools, counting=True)
        return count_json(payload)

    async def prepare(self, request: ChatRequest, call: Call) -> ChatRequest:
        return request

    async def answer(self, answer: Answer, call: Call) -> JsonObject:
        model = call.request.model if call.request is not None else call.model
        return message_json(answer, model)

    def stream(self, events: AsyncGenerator[Event, None], call: Call) -> AsyncGenerator[str, None]:
        model = call.request.model if call.request is not None else call.model
        return render_stream(events, MessagesStream(model, self.error))

    def error(self, error: GatewayError) -> JsonObject:
        return anthropic_error_body(error.message, error_type(error))
