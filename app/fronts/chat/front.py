"""`POST /v1/chat/completions`: the request read by the OpenAI chat codec (`app.codecs.openai_chat`), the loop's
answer rendered as a `chat.completion` or a stream.

The stream is one consistent SSE stream over every round: one `id`, `model` and `created`, choice index 0, text and
reasoning as they come, the client's tool calls at the end, exactly one finish reason, an optional usage chunk
summed over rounds, then `[DONE]`. Its first chunk waits for the first thing to say, so a round that only calls
tools starts with `content: null`, as OpenAI sends it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from app.codecs.openai_chat.answers import READ_MESSAGE_FIELDS, finish_reason_of, tool_call_json, usage_json
from app.codecs.openai_chat.protocol import reasoning_field_of
from app.codecs.openai_chat.requests import chat_request
from app.common.errors import GatewayError
from app.core.model import ChatRequest, JsonObject, ResponseMeta
from app.engine.answer import Answer
from app.engine.events import (
    ClientToolCall,
    ContentDelta,
    DiscoveryStats,
    Event,
    Finished,
    KeepAlive,
    ReasoningDelta,
    RefusalDelta,
    RoundStarted,
    Routed,
)
from app.fronts.base import Call, render_stream
from app.fronts.chat.wire import parse_chat_request
from app.fronts.shapes import OPENAI, ErrorShape
from app.fronts.sse_wire import KEEPALIVE, sse

log = logging.getLogger("toolsift.stream")
DONE = "data: [DONE]\n\n"


def completion(answer: Answer, model: str) -> JsonObject:
    """A plain answer as a `chat.completion`."""
    message: JsonObject = {"role": "assistant", "content": answer.content}
    if answer.extra is not None and answer.extra.format == "openai":
        message.update({key: value for key, value in answer.extra.value.items() if key not in READ_MESSAGE_FIELDS})
    if answer.refusal is not None:
        message["refusal"] = answer.refusal
    if answer.reasoning is not None:
        message[reasoning_field_of(answer.reasoning_field)] = answer.reasoning
    if answer.tool_calls:
        message["tool_calls"] = [tool_call_json(call) for call in answer.tool_calls]
    meta = answer.meta
    body: JsonObject = {}
    if meta.extra is not None and meta.extra.format == "openai":
        body.update(meta.extra.value)
    body.update(
        id=meta.id or f"chatcmpl-{uuid.uuid4().hex}",
        object="chat.completion",
        created=meta.created or int(time.time()),
        model=meta.model or model,
        choices=[{"index": 0, "message": message, "finish_reason": finish_reason_of(answer.stop)}],
    )
    if answer.logprobs is not None:
        body["choices"][0]["logprobs"] = answer.logprobs
    _add_meta(body, meta)
    if answer.usage is not None:
        body["usage"] = usage_json(answer.usage)
    body["tool_discovery"] = answer.discovery.as_json()
    return body


def _add_meta(body: JsonObject, meta: ResponseMeta) -> None:
    if meta.system_fingerprint is not None:
        body["system_fingerprint"] = meta.system_fingerprint
    if meta.service_tier is not None:
        body["service_tier"] = meta.service_tier


class ChatStream:
    """Renders the loop's events as `chat.completion.chunk` SSE events, all with the same id, created, model."""

    def __init__(self, model: str, include_usage: bool) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"  # until the upstream names its answer
        self.created = int(time.time())
        self.model = model
        self.meta: ResponseMeta | None = None
        self.include_usage = include_usage
        self.committed = False  # the upstream answered, so the response head (200) went out
        self.started = False  # the role chunk went out

    def render(self, event: Event) -> list[str]:
        if isinstance(event, Routed):  # the upstream's name for the model, answered with
            self.model = event.model
            return []
        if isinstance(event, RoundStarted):
            if self.committed:
                return []
            self.committed, self.meta = True, event.meta
            self.model = event.meta.model or self.model
            self.id = event.meta.id or self.id  # the upstream's own id and time, kept; minted only when it gave none
            self.created = event.meta.created or self.created
            return [""]  # the head goes out now; the first chunk waits until there is something to say
        if isinstance(event, ContentDelta):
            return [*self._start(""), self._chunk({"content": event.text}, logprobs=event.logprobs)]
        if isinstance(event, RefusalDelta):
            return [*self._start(None), self._chunk({"refusal": event.text}, logprobs=event.logprobs)]
        if isinstance(event, ReasoningDelta):
            return [*self._start(None), self._chunk({reasoning_field_of(event.field): event.text})]
        if isinstance(event, ClientToolCall):
            delta = {"tool_calls": [{"index": event.index, **tool_call_json(event.call)}]}
            return [*self._start(None), self._chunk(delta)]
        if isinstance(event, Finished):
            out = [*self._start(""), self._chunk({}, finish_reason_of(event.stop))]
            if self.include_usage:
                usage = usage_json(event.usage) if event.usage is not None else None
                out.append(sse(self._envelope(choices=[], usage=usage, tool_discovery=event.discovery.as_json())))
            return [*out, DONE]
        if isinstance(event, KeepAlive):
            return [KEEPALIVE]
        return []

    def failure(self, error: GatewayError, discovery: DiscoveryStats | None) -> list[str]:
        return [sse(error.body())]

    def _start(self, content: str | None) -> list[str]:
        if self.started:
            return []
        self.started = True
        return [self._chunk({"role": "assistant", "content": content})]

    def _chunk(self, delta: JsonObject, finish_reason: str | None = None, logprobs: JsonObject | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}
        return sse(self._envelope(choices=[choice]))

    def _envelope(self, **fields: Any) -> JsonObject:
        envelope: JsonObject = {"id": self.id, "object": "chat.completion.chunk", "created": self.created}
        envelope["model"] = self.model
        if self.meta is not None:
            _add_meta(envelope, self.meta)
        envelope.update(fields)
        return envelope


class ChatCompletionsFront:
    """`POST /v1/chat/completions`."""

    name = "chat_completions"
    shape: ErrorShape = OPENAI  # how its clients read an error: its own and those the edge answers
    keepalive = KEEPALIVE

    def parse(self, body: bytes, call: Call) -> ChatRequest:
        return chat_request(*parse_chat_request(body, call.limits.max_messages, call.limits.max_tools))

    async def prepare(self, request: ChatRequest, call: Call) -> ChatRequest:
        return request

    async def answer(self, answer: Answer, call: Call) -> JsonObject:
        return completion(answer, call.model)

    def stream(self, events: AsyncGenerator[Event, None], call: Call) -> AsyncGenerator[str, None]:
        include_usage = call.request is not None and call.request.options.include_usage
        return render_stream(events, ChatStream(call.model, include_usage))

    def error(self, error: GatewayError) -> JsonObject:
        return self.shape.failure(error)

    def answered(self, error: GatewayError) -> GatewayError:
        return error
