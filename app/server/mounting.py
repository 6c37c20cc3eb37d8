"""Each front's declared routes (app/fronts/routing.py) as the edge serves them: a chat route through the common
pipeline, a count through the same limits, a view as JSON, MCP sessions through the MCP transport. The way each
kind is served is the same for every front, so a front declares what it serves and never speaks HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp

from app.common.errors import GatewayError
from app.common.identity import identity_of
from app.engine.api import Engine
from app.fronts.base import Call, Limits
from app.fronts.routing import Chat, Count, FrontSpec, Route, Sessions, View, ViewArgs
from app.server.edge import request_id_of
from app.server.mcp_http import HttpFront
from app.server.serve import serve, serve_count

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Mounted:
    """A front's route with what serves it: a `handler`, or an ASGI `app` that answers everything under the
    path (with its `lifespan`, run while the gateway runs)."""

    route: Route
    front: FrontSpec
    handler: Handler | None = None
    app: ASGIApp | None = None
    lifespan: Callable[[], AbstractAsyncContextManager[None]] | None = None


def mount(front: FrontSpec, engine: Engine) -> list[Mounted]:
    """The front's routes, built once for this app."""
    mounted = []
    for route in front.routes(engine):
        serves = route.serves
        if isinstance(serves, Sessions):
            sessions = HttpFront(engine, serves, route.path)
            mounted.append(Mounted(route, front, app=sessions, lifespan=sessions.lifespan))
        else:
            mounted.append(Mounted(route, front, handler=_handler(serves, engine)))
    return mounted


def _handler(serves: Chat | Count | View, engine: Engine) -> Handler:
    if isinstance(serves, Chat):
        chat = serves.front

        async def chat_handler(request: Request) -> Response:
            return await serve(engine, request, chat)

        return chat_handler
    if isinstance(serves, Count):
        counting = serves.front

        async def count_handler(request: Request) -> Response:
            return await serve_count(engine, request, counting)

        return count_handler
    return _view(serves, engine)


def _view(view: View, engine: Engine) -> Handler:
    """A view's JSON, or its error in the front's shape; a view reads no body and holds no slot."""

    async def view_handler(request: Request) -> Response:
        request_id = request_id_of(request.scope)
        call = Call(request_id, identity_of(request.scope), Limits(engine.config.max_messages, 0))
        args = ViewArgs(request.method, request.path_params, request.query_params)
        try:
            body = await view.answer(call, args)
        except GatewayError as exc:
            return JSONResponse(view.error(exc), exc.status, headers={**exc.headers(), "x-request-id": request_id})
        return JSONResponse(body, headers={"x-request-id": request_id})

    return view_handler


def lifespans(mounted: list[Mounted]) -> Callable[[], AbstractAsyncContextManager[None]]:
    """The mounted apps' lifespans as one, entered in order and left in reverse."""

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for entry in mounted:
                if entry.lifespan is not None:
                    await stack.enter_async_context(entry.lifespan())
            yield

    return running
