"""An upstream in memory at the engine's own seam: a `Provider` that answers scripted deltas and records every
round it was sent, so the engine's entry runs without HTTP (as httpx's MockTransport stands in for a network)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from app.config import Config
from app.core.model import CallFragment, ChatRequest, Delta, Message, Options, StopReason, UpstreamRequest, Usage
from app.engine.answer import aggregate
from app.engine.caller import Caller
from app.engine.gateway import Gateway
from tests.support.gateway import example_targets


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

    def _sent(self, request: UpstreamRequest) -> None:
        # As sent: the loop goes on appending to the conversation it passed, and a round is what it was then.
        self.rounds.append(dataclasses.replace(request, messages=list(request.messages), tools=list(request.tools)))

    async def complete(self, request: UpstreamRequest) -> Delta:
        self._sent(request)
        return self.script.pop(0)

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        self._sent(request)
        yield self.script.pop(0)

    async def aclose(self) -> None:
        return None


def ask(text: str, model: str = "fast", **fields: Any) -> ChatRequest:
    """A user's one-message request, as every front hands it to the engine."""
    return ChatRequest(model, [Message("user", text)], [], Options(), **fields)


async def answer_text(gateway: Gateway, request: ChatRequest, caller: Caller | None = None) -> str:
    """What the engine answers `request`, as the user reads it."""
    return (await aggregate(gateway.run(request, caller or Caller()))).content


@contextlib.asynccontextmanager
async def started_engine(config: Config, provider: str = "up") -> AsyncIterator[tuple[Gateway, ScriptedProvider]]:
    """A started Gateway on `config` whose provider `provider` is scripted, beside the example servers the config
    names; yields (gateway, provider) and stops the gateway after."""
    scripted = ScriptedProvider(provider)
    gateway = Gateway(config, mcp_targets=example_targets(*config.mcp_servers), providers={provider: scripted})
    await gateway.start()
    try:
        yield gateway, scripted
    finally:
        await gateway.stop()
