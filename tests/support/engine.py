"""An upstream in memory at the engine's own seam: a `Provider` that answers scripted deltas and records every
round it was sent, so the engine's entry runs without HTTP (as httpx's MockTransport stands in for a network)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from app.core.model import CallFragment, Delta, StopReason, UpstreamRequest, Usage


def said(text: str) -> Delta:
    """A round that answers `text`."""
    return Delta(content=text, stop=StopReason(), usage=Usage(10, 5, 15))


def calls(*named: tuple[str, dict[str, Any]]) -> Delta:
    """A round that calls tools: (name, arguments) each."""
    fragments = [
        CallFragment(index, f"call_{index}", name, json.dumps(arguments))
        for index, (name, arguments) in enumerate(named)
    ]
    return Delta(calls=fragments, stop=StopReason("tool_calls"), usage=Usage(10, 5, 15))


class ScriptedProvider:
    """Answers each round with the next scripted delta; `rounds` holds what each round was sent."""

    def __init__(self, name: str, *script: Delta) -> None:
        self.name = name
        self.script = list(script)
        self.rounds: list[UpstreamRequest] = []

    def tool_names(self, round_index: int) -> list[str]:
        return [tool.name for tool in self.rounds[round_index].tools]

    async def complete(self, request: UpstreamRequest) -> Delta:
        self.rounds.append(request)
        return self.script.pop(0)

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        self.rounds.append(request)
        yield self.script.pop(0)

    async def aclose(self) -> None:
        return None
