"""The Messages front's routes."""

from __future__ import annotations

from app.engine.api import Engine
from app.fronts.messages.front import MessagesFront
from app.fronts.routing import POST, Chat, Count, FrontSpec, Route


def routes(_: Engine) -> tuple[Route, ...]:
    front = MessagesFront()
    return (
        Route("/v1/messages", POST, "Anthropic Messages", Chat(front), direct=True),
        Route("/v1/messages/count_tokens", POST, "Anthropic token count", Count(front)),
    )


FRONT = FrontSpec("messages", "/v1/messages", MessagesFront.shape, routes)
