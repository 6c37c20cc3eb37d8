"""What every front (a wire format served to clients) gives the server: its request in, its answer, stream and
errors out. The server edge (`app/server/serve.py`) runs the same pipeline for all of them."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from app.engine.answer import Answer
from app.engine.events import Event
from app.engine.model import ChatRequest, JsonObject
from app.errors import GatewayError
from app.server.auth import Identity


@dataclass(frozen=True)
class Limits:
    max_messages: int
    max_tools: int


@dataclass
class Call:
    """One request as a front sees it: who asked, under which id, what it asked, the model it was routed to."""

    request_id: str
    identity: Identity
    limits: Limits
    model: str = ""
    request: ChatRequest | None = None  # once parsed
    state: object = None  # the front's own record of the request (its wire fields the engine has no place for)


class Front(Protocol):
    keepalive: str  # what a stream writes while it has nothing to say (a KeepAlive event, rendered)

    def parse(self, body: bytes, call: Call) -> ChatRequest:
        """The body as the engine's request; GatewayError (400) when it is not a valid request. Pure CPU: a large
        body is parsed in a worker thread."""
        ...

    async def prepare(self, request: ChatRequest, call: Call) -> ChatRequest:
        """The request completed with what the gateway keeps (a stored conversation it continues, say)."""
        ...

    async def answer(self, answer: Answer, call: Call) -> JsonObject:
        """A plain answer's response body."""
        ...

    def stream(self, events: AsyncGenerator[Event, None], call: Call) -> AsyncGenerator[str, None]:
        """The events as SSE text. A failure before the upstream answered is raised (it keeps its HTTP status)."""
        ...

    def error(self, error: GatewayError) -> JsonObject:
        """An error's response body in this wire format."""
        ...
