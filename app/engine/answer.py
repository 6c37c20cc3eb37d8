"""A plain (non-streamed) answer: the loop's events aggregated into one result that any front renders."""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass, field

from app.core.model import JsonObject, Native, ResponseMeta, StopReason, ToolCall, Usage
from app.engine.events import (
    ClientToolCall,
    ContentDelta,
    DiscoveryStats,
    Event,
    Failed,
    Finished,
    HostedCall,
    ReasoningBlock,
    ReasoningDelta,
    RefusalDelta,
)
from app.engine.turn import merged_logprobs


@dataclass
class Answer:
    content: str | None
    reasoning: str | None
    reasoning_field: str | None
    tool_calls: list[ToolCall]
    stop: StopReason
    usage: Usage | None
    discovery: DiscoveryStats
    meta: ResponseMeta
    logprobs: JsonObject | None = None
    extra: Native | None = None
    reasoning_blocks: list[Native] = field(default_factory=list)  # every round's, in order
    # Every round's reasoning blocks and hosted calls, in the order they came: a front of their format lists them.
    upstream_items: list[Native] = field(default_factory=list)
    refusal: str | None = None  # said apart from the text (a chat upstream's)


@dataclass
class _Parts:
    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_field: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    logprobs: JsonObject | None = None
    reasoning_blocks: list[Native] = field(default_factory=list)
    upstream_items: list[Native] = field(default_factory=list)


async def aggregate(events: AsyncIterable[Event]) -> Answer:
    """Everything the events said, as one answer; a `Failed` request raises its error."""
    parts = _Parts()
    async for event in events:
        if isinstance(event, ContentDelta):
            parts.content.append(event.text)
            parts.logprobs = merged_logprobs(parts.logprobs, event.logprobs)
        elif isinstance(event, RefusalDelta):
            parts.refusal.append(event.text)
            parts.logprobs = merged_logprobs(parts.logprobs, event.logprobs)
        elif isinstance(event, ReasoningDelta):
            parts.reasoning.append(event.text)
            parts.reasoning_field = event.field
        elif isinstance(event, ReasoningBlock):
            parts.reasoning_blocks.append(event.native)
            parts.upstream_items.append(event.native)
        elif isinstance(event, HostedCall):
            parts.upstream_items.append(event.native)
        elif isinstance(event, ClientToolCall):
            parts.calls.append(event.call)
        elif isinstance(event, Finished):
            return Answer(
                content="".join(parts.content) or None,
                refusal="".join(parts.refusal) or None,
                reasoning="".join(parts.reasoning) or None,
                reasoning_field=parts.reasoning_field,
                tool_calls=parts.calls,
                stop=event.stop,
                usage=event.usage,
                discovery=event.discovery,
                meta=event.meta,
                logprobs=parts.logprobs,
                extra=event.extra,
                reasoning_blocks=parts.reasoning_blocks,
                upstream_items=parts.upstream_items,
            )
        elif isinstance(event, Failed):
            raise event.error
    raise AssertionError("the loop ended without Finished or Failed")  # pragma: no cover
