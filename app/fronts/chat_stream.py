"""`stream: true`: one consistent SSE stream over every round of the loop.

Content deltas go to the client the moment the upstream sends them, in every round. Tool-call deltas are
assembled per round; calls to `search_tools` and MCP tools are completed here and never shown, calls to client
tools are sent as tool-call deltas ending with `finish_reason: "tool_calls"`. The client sees one `id`, `model`
and `created`, choice index 0, exactly one finish reason, an optional usage chunk summed over rounds, `[DONE]`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from app.engine.loop import ChatLoop, Plan, Step
from app.fronts.chat_completions import GatewayError, error_body
from app.server.sse import sse

log = logging.getLogger("toolsift.stream")
DONE = "data: [DONE]\n\n"


@dataclass
class RoundMessage:
    """One upstream round's assistant message, assembled from its chunks."""

    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def add(self, chunk: dict[str, Any]) -> str:
        """Absorb a chunk; return the content it adds (to forward at once)."""
        text = ""
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                text += delta["content"]
            for key in ("reasoning_content", "reasoning"):
                if isinstance(delta.get(key), str):
                    self.extra[key] = self.extra.get(key, "") + delta[key]
            for fragment in delta.get("tool_calls") or ():
                self._add_call(fragment)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        if text:
            self.content.append(text)
        return text

    def _add_call(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index", len(self.calls))
        call = self.calls.setdefault(index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        if fragment.get("id"):
            call["id"] = fragment["id"]
        function = fragment.get("function") or {}
        if function.get("name"):
            call["function"]["name"] += function["name"]
        if function.get("arguments"):
            call["function"]["arguments"] += function["arguments"]

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None, **self.extra}
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        return message


class ChunkWriter:
    """Chunks the client sees, all with the same id, created and model."""

    def __init__(self, model: str) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return sse(self._envelope(choices=[choice]))

    def usage(self, usage: dict[str, Any] | None, stats: dict[str, Any]) -> str:
        return sse(self._envelope(choices=[], usage=usage, tool_discovery=stats))

    def _envelope(self, **fields: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **fields,
        }


async def stream_chat(loop: ChatLoop, payload: dict[str, Any]) -> AsyncGenerator[str, None]:
    """SSE text for one request. Raises only before its first chunk; after it, errors become error events.
    Keep-alives, the deadline and cancellation are the response's (app/sse.py)."""
    base = {**loop.upstream_base(payload), "stream": True}
    if "stream_options" in payload:
        base["stream_options"] = payload["stream_options"]
    include_usage = bool((payload.get("stream_options") or {}).get("include_usage"))
    messages: list[dict[str, Any]] = list(payload["messages"])
    writer: ChunkWriter | None = None
    wrote_content = False
    try:
        while True:
            round_message = RoundMessage()
            separate = wrote_content
            async for chunk in loop.stream_round(base, messages):
                if writer is None:
                    writer = ChunkWriter(str(chunk.get("model") or loop.route.model))
                    yield writer.chunk({"role": "assistant", "content": ""})
                text = round_message.add(chunk)
                if text:
                    yield writer.chunk({"content": f"\n\n{text}" if separate else text})
                    separate, wrote_content = False, True
            if writer is None:  # an upstream that closed the stream without a single chunk
                raise GatewayError(502, "The upstream closed the stream without any data.", "upstream_error")
            message = round_message.message()
            plan = loop.plan(message)
            if plan.step is Step.RUN_TOOLS:
                await loop.run_tools(messages, message, plan)
                continue
            for item in _ending(loop, writer, plan, round_message, message):
                yield item
            break
        if include_usage:
            yield writer.usage(loop.stats.usage, loop.discovery_stats())
        yield DONE
    except GatewayError as exc:
        if writer is None:
            raise
        yield sse(exc.body())
    except Exception:
        if writer is None:
            raise
        log.exception("error while streaming")
        yield sse(error_body("Internal gateway error while streaming; see the gateway log.", "server_error"))


def _ending(
    loop: ChatLoop, writer: ChunkWriter, plan: Plan, round_message: RoundMessage, message: dict[str, Any]
) -> list[str]:
    if plan.step is Step.CLIENT_TOOLS:
        deltas = [
            {"index": index, "id": call["id"], "type": "function", "function": call["function"]}
            for index, call in enumerate(plan.calls)
        ]
        return [writer.chunk({"tool_calls": deltas}), writer.chunk({}, "tool_calls")]
    if plan.step is Step.ROUND_LIMIT:
        marker = loop.round_limit_text(None)
        separator = "\n\n" if message.get("content") else ""
        return [writer.chunk({"content": separator + marker}), writer.chunk({}, "length")]
    return [writer.chunk({}, round_message.finish_reason or "stop")]
