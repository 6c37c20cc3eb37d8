"""What one request did, counted from the loop's events as they pass: the log line's and the metrics' source.

A request refused before any upstream call has no events, so it counts no round and no saved tokens; a round whose
upstream call failed (no key, unreachable, an error answer) counts as a round but saved nothing: no call carried
fewer tools.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field

from app.core.model import StopReason, Usage
from app.engine.events import (
    DiscoveryStats,
    Event,
    Failed,
    Finished,
    McpCallFinished,
    RoundFinished,
    Routed,
    SearchDone,
)


@dataclass
class RequestRecord:
    rounds: int = 0
    upstream_seconds: float = 0.0
    tokens_saved: int = 0
    usage: Usage | None = None
    searches: list[SearchDone] = field(default_factory=list)
    mcp_calls: list[McpCallFinished] = field(default_factory=list)
    discovery: DiscoveryStats | None = None
    stop: StopReason | None = None
    provider: str | None = None  # once routed
    model: str | None = None

    @property
    def mcp_errors(self) -> int:
        return sum(not call.ok for call in self.mcp_calls)

    def add(self, event: Event) -> None:
        if isinstance(event, Routed):
            self.provider, self.model = event.provider, event.model
        elif isinstance(event, RoundFinished):
            self.rounds += 1
            self.upstream_seconds += event.seconds
            if event.ok:
                self.tokens_saved += event.unsent_tool_tokens
            if event.usage is not None:
                self.usage = self.usage or Usage()
                self.usage.add(event.usage)
        elif isinstance(event, SearchDone):
            self.searches.append(event)
        elif isinstance(event, McpCallFinished):
            self.mcp_calls.append(event)
        elif isinstance(event, Finished):
            self.discovery, self.stop = event.discovery, event.stop
        elif isinstance(event, Failed):
            self.discovery = event.discovery

    async def observe(self, events: AsyncGenerator[Event, None]) -> AsyncGenerator[Event, None]:
        """`events`, unchanged, counted on the way."""
        async with aclosing(events):
            async for event in events:
                self.add(event)
                yield event
