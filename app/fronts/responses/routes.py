"""The Responses front's routes: creating and compacting through the chat pipeline, and the caller's stored
responses and their input items as views (another caller's are a 404, as unknown ones are)."""

from __future__ import annotations

from app.core.model import JsonObject
from app.engine.api import Engine
from app.fronts.base import Call
from app.fronts.responses.compact import CompactFront
from app.fronts.responses.front import ResponsesFront
from app.fronts.responses.pages import input_page
from app.fronts.routing import GET, POST, Chat, FrontSpec, Route, View, ViewArgs


def routes(engine: Engine) -> tuple[Route, ...]:
    front = ResponsesFront(engine.responses)

    async def stored(call: Call, args: ViewArgs) -> JsonObject:
        """`GET` or `DELETE /v1/responses/{id}`."""
        if args.method == "DELETE":
            return await front.delete(call, args.path["response_id"])
        return await front.retrieve(call, args.path["response_id"])

    async def input_items(call: Call, args: ViewArgs) -> JsonObject:
        """`GET /v1/responses/{id}/input_items`: the items a stored response answered, a page at a time."""
        return await front.input_items(call, args.path["response_id"], input_page(args.query))

    return (
        Route("/v1/responses", POST, "Responses API", Chat(front), direct=True),
        Route("/v1/responses/compact", POST, "Compact a conversation", Chat(CompactFront(engine.responses))),
        Route("/v1/responses/{response_id}", ("GET", "DELETE"), "A stored response", View(stored, front.error)),
        Route("/v1/responses/{response_id}/input_items", GET, "Its input items", View(input_items, front.error)),
    )


FRONT = FrontSpec("responses", "/v1/responses", ResponsesFront.shape, routes)
