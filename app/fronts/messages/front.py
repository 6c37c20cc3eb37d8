"""`POST /v1/messages` for Claude Code and the Anthropic SDKs: the request read by the Anthropic codec
(`app.codecs.anthropic`), the loop's answer rendered as a `message` or a stream. Errors are in Anthropic's shape,
`{"type": "error", "error": {"type", "message"}}`, with Anthropic's error types chosen by HTTP status.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from app.codecs.anthropic.answers import (
    meta_fields,
    stop_reason,
    text_blocks,
    thinking_blocks,
    tool_use_json,
    usage_json,
)
from app.codecs.anthropic.protocol import BETA_HEADER
from app.codecs.anthropic.requests import chat_request
from app.common import tokens
from app.common.errors import GatewayError
from app.core.model import ChatRequest, JsonObject
from app.engine.answer import Answer
from app.engine.events import Event
from app.fronts.base import Call, render_stream
from app.fronts.messages.stream import PING, MessagesStream
from app.fronts.messages.wire import parse_messages_request
from app.fronts.shapes import ANTHROPIC, ErrorShape


def message_json(answer: Answer, model: str) -> JsonObject:
    """A plain answer as an Anthropic `message`."""
    content = thinking_blocks(answer.reasoning_blocks)  # every round's, signed, as a stream gives them
    if not content and answer.reasoning:
        content.append({"type": "thinking", "thinking": answer.reasoning, "signature": ""})
    upstream = answer.extra.value if answer.extra is not None and answer.extra.format == "anthropic" else None
    content += text_blocks(answer.content, upstream)
    content.extend(tool_use_json(call, upstream) for call in answer.tool_calls)
    return {
        **meta_fields(answer.meta),
        "id": _message_id(answer.meta.id),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(answer.stop),
        "stop_sequence": answer.stop.sequence,
        "usage": usage_json(answer.usage),
        "tool_discovery": answer.discovery.as_json(),
    }


def _message_id(upstream_id: str) -> str:
    return upstream_id if upstream_id.startswith("msg_") else f"msg_{uuid.uuid4().hex}"


COUNT_EXACT_CHARS = 200_000  # counted exactly; the rest of a larger body is estimated, as the answer already is


def count_json(payload: JsonObject) -> JsonObject:
    """`count_tokens`: an estimate with the gateway's tokenizer (o200k_base, not Claude's), of the system prompt,
    messages and tools as sent."""
    counted: dict[str, Any] = {key: payload.get(key) for key in ("system", "messages", "tools") if payload.get(key)}
    text = json.dumps(counted, ensure_ascii=False, separators=(",", ":"))
    return {"input_tokens": tokens.count_text(text, COUNT_EXACT_CHARS)}


class MessagesFront:
    """`POST /v1/messages` (and `count_tokens`)."""

    name = "messages"
    shape: ErrorShape = ANTHROPIC  # how its clients read an error: its own and those the edge answers
    keepalive = PING

    def parse(self, body: bytes, call: Call) -> ChatRequest:
        request, payload = parse_messages_request(body, call.limits.max_messages, call.limits.max_tools)
        return chat_request(request, payload, call.headers.get(BETA_HEADER))

    def count(self, body: bytes, call: Call) -> JsonObject:
        _, payload = parse_messages_request(body, call.limits.max_messages, call.limits.max_tools, counting=True)
        return count_json(payload)

    async def prepare(self, request: ChatRequest, call: Call) -> ChatRequest:
        return request

    def answered(self, error: GatewayError) -> GatewayError:
        """A provider without its key is the gateway's own configuration, which no retry fixes: Anthropic clients
        get what Anthropic answers a request without a key, 401 `authentication_error` (their SDKs and Claude Code
        retry a 503 `overloaded_error`, for minutes), saying which variable to set."""
        if error.code == "provider_not_configured":
            return GatewayError(401, error.message, "authentication_error", error.param, error.code)
        return error

    async def answer(self, answer: Answer, call: Call) -> JsonObject:
        model = call.request.model if call.request is not None else call.model
        return message_json(answer, model)

    def stream(self, events: AsyncGenerator[Event, None], call: Call) -> AsyncGenerator[str, None]:
        model = call.request.model if call.request is not None else call.model
        return render_stream(events, MessagesStream(model, self.error))

    def error(self, error: GatewayError) -> JsonObject:
        return self.shape.failure(error)
