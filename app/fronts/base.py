"""What every front (a wire format served to clients) gives the server: its request in, its answer, stream and
errors out. The server edge (`app/server/serve.py`) runs the same pipeline for all of them."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Protocol

from app.common.errors import GatewayError
from app.common.identity import Identity
from app.core.model import ChatRequest, JsonObject
from app.engine.answer import Answer
from app.engine.events import DiscoveryStats, Event, Failed, Finished
from app.fronts.shapes import ErrorShape

log = logging.getLogger("toolsift.stream")
INTERNAL_ERROR = "Internal gateway error while streaming; see the gateway log."


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
    headers: Mapping[str, str] = field(default_factory=dict)  # the request's headers, names in lower case
    reply_headers: dict[str, str] = field(default_factory=dict)  # headers the front adds to its answer


class Front(Protocol):
    name: str  # the API it serves, as traces name it (`chat_completions`, `messages`, `responses`)
    keepalive: str  # what a stream writes while it has nothing to say (a KeepAlive event, rendered)
    shape: ErrorShape  # how its clients read an error: its own, and the refusals the edge answers for it

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

    def answered(self, error: GatewayError) -> GatewayError:
        """The error as this front answers it: the same, or what its clients act on better (its status, type)."""
        ...


class StreamRenderer(Protocol):
    """One front's stream writer: each event as that front's SSE text."""

    committed: bool  # the upstream answered and the head went out: failures are events from then on

    def render(self, event: Event) -> list[str]: ...

    def failure(self, error: GatewayError, discovery: DiscoveryStats | None) -> list[str]:
        """The events that end a stream that failed after it was committed."""
        ...


async def render_stream(
    events: AsyncGenerator[Event, None],
    renderer: StreamRenderer,
    on_finished: Callable[[list[str]], Awaitable[list[str]]] | None = None,
) -> AsyncGenerator[str, None]:
    """SSE text for one request, for every front. A failure before the upstream answered is raised (it keeps its
    HTTP status); after that it becomes the front's error events, a gateway bug included. `on_finished` runs
    before the last events go out, and gives them as they go (a stored response can be continued as soon as the
    client has it, and its last event says whether it was stored)."""
    try:
        async with aclosing(events):
            async for event in events:
                if isinstance(event, Failed):
                    if not renderer.committed:
                        raise event.error
                    for text in renderer.failure(event.error, event.discovery):
                        yield text
                    return
                texts = renderer.render(event)
                if on_finished is not None and isinstance(event, Finished):
                    texts = await on_finished(texts)
                for text in texts:
                    yield text
    except Exception:
        if not renderer.committed:
            raise
        log.exception("error while streaming")
        for text in renderer.failure(GatewayError(500, INTERNAL_ERROR, "server_error"), None):
            yield text
