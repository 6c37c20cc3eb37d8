"""The loop's events as Anthropic's Messages stream: `message_start`, then content blocks (`content_block_start`,
`content_block_delta` with `thinking_delta` / `text_delta` / `input_json_delta`, `content_block_stop`), then
`message_delta` with the stop reason and usage summed over rounds, then `message_stop`; `ping` while waiting.

Each SSE event names its type (`event: ...`), as Anthropic's do. The client's tool calls come at the end, each its
own `tool_use` block; an error after the stream began is an `error` event.

Every round's thinking is its own block, streamed as it comes. From an Anthropic upstream each thinking block ends
with its own `signature_delta` and `redacted_thinking` blocks come whole, so a stream carries the same signed blocks
as a plain answer, the rounds the gateway answered itself (searches, MCP calls) included.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable

from app.codecs.anthropic.answers import (
    meta_fields,
    stop_reason,
    thinking_blocks,
    tool_input,
    tool_use_json,
    usage_json,
)
from app.common.errors import GatewayError
from app.core.model import JsonObject, Native, ToolCall
from app.engine.events import (
    ClientToolCall,
    ContentDelta,
    DiscoveryStats,
    Event,
    Finished,
    KeepAlive,
    ReasoningBlock,
    ReasoningDelta,
    RoundStarted,
)
from app.fronts.sse_wire import named_sse

log = logging.getLogger("toolsift.stream")


def event(data: JsonObject) -> str:
    return named_sse(str(data["type"]), data)


PING = event({"type": "ping"})
END_FIELDS = ("container", "stop_details")  # an upstream's fields of its message that its `message_delta` says


class MessagesStream:
    """Renders events as Anthropic stream events; one block is open at a time, as Anthropic streams them."""

    def __init__(self, model: str, error: Callable[[GatewayError], JsonObject]) -> None:
        self.error = error  # an error's body in Anthropic's shape
        self.id = f"msg_{uuid.uuid4().hex}"
        self.model = model
        self.committed = False  # message_start went out
        self.index = -1
        self.open: str | None = None  # the type of the block being streamed
        self.calls: list[ToolCall] = []

    def render(self, item: Event) -> list[str]:
        if isinstance(item, RoundStarted):
            if self.committed:  # a later round's thinking is its own block (each round's is signed apart)
                return self._close() if self.open == "thinking" else []
            self.committed = True
            if item.meta.id.startswith("msg_"):  # an Anthropic upstream's own id, kept
                self.id = item.meta.id
            message: JsonObject = {**meta_fields(item.meta), "id": self.id, "type": "message", "role": "assistant"}
            message["model"] = self.model
            message.update(content=[], stop_reason=None, stop_sequence=None, usage=usage_json(None))
            return [event({"type": "message_start", "message": message})]
        if isinstance(item, ReasoningDelta):
            start = self._block("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            return [*start, self._delta({"type": "thinking_delta", "thinking": item.text})]
        if isinstance(item, ReasoningBlock):
            return self._reasoning_block(item.native)
        if isinstance(item, ContentDelta):
            start = self._block("text", {"type": "text", "text": ""})
            return [*start, self._delta({"type": "text_delta", "text": item.text})]
        if isinstance(item, ClientToolCall):
            self.calls.append(item.call)  # sent at the end: the request ends right after its calls
            return []
        if isinstance(item, Finished):
            return self._finish(item)
        if isinstance(item, KeepAlive):
            return [PING]
        return []

    def failure(self, error: GatewayError, discovery: DiscoveryStats | None) -> list[str]:
        return [event(self.error(error))]

    def _reasoning_block(self, native: Native) -> list[str]:
        """A reasoning block ended upstream: a thinking block gets its signature and ends here too (a later one
        is a block of its own); a redacted one is sent whole, as Anthropic streams it."""
        block = next(iter(thinking_blocks([native])), None)
        if block is None:
            return []
        if block["type"] == "redacted_thinking":
            return [*self._block("redacted_thinking", block), *self._close()]
        out: list[str] = []
        if self.open != "thinking":  # a thinking block that streamed no text
            out += self._block("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            if block.get("thinking"):
                out.append(self._delta({"type": "thinking_delta", "thinking": block["thinking"]}))
        if block.get("signature"):
            out.append(self._delta({"type": "signature_delta", "signature": block["signature"]}))
        return [*out, *self._close()]

    def _finish(self, finished: Finished) -> list[str]:
        out = self._close()
        upstream = finished.extra.value if finished.extra is not None and finished.extra.format == "anthropic" else None
        for call in self.calls:
            out += self._block("tool_use", {**tool_use_json(call, upstream), "input": {}})
            arguments = json.dumps(tool_input(call), ensure_ascii=False)
            out += [self._delta({"type": "input_json_delta", "partial_json": arguments}), *self._close()]
        ended = {key: value for key, value in meta_fields(finished.meta).items() if key in END_FIELDS}
        delta = {**ended, "stop_reason": stop_reason(finished.stop), "stop_sequence": finished.stop.sequence}
        usage = usage_json(finished.usage)
        out.append(event({"type": "message_delta", "delta": delta, "usage": usage}))
        return [*out, event({"type": "message_stop"})]

    def _block(self, kind: str, start: JsonObject) -> list[str]:
        if self.open == kind and kind != "tool_use":
            return []
        out = self._close()
        self.index += 1
        self.open = kind
        return [*out, event({"type": "content_block_start", "index": self.index, "content_block": start})]

    def _close(self) -> list[str]:
        if self.open is None:
            return []
        self.open = None
        return [event({"type": "content_block_stop", "index": self.index})]

    def _delta(self, delta: JsonObject) -> str:
        return event({"type": "content_block_delta", "index": self.index, "delta": delta})
