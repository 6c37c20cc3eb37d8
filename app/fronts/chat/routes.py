"""The Chat Completions front's routes."""

from __future__ import annotations

from app.engine.api import Engine
from app.fronts.chat.front import ChatCompletionsFront
from app.fronts.routing import POST, Chat, FrontSpec, Route


def routes(_: Engine) -> tuple[Route, ...]:
    front = ChatCompletionsFront()
    return (Route("/v1/chat/completions", POST, "Chat Completions, tools deferred", Chat(front), direct=True),)


FRONT = FrontSpec("chat_completions", "/v1/chat/completions", ChatCompletionsFront.shape, routes)
