"""The Responses API's handlers: `POST /v1/responses` (and `POST /v1/responses/compact`) through the common
pipeline, and the caller's stored responses at `GET`/`DELETE /v1/responses/{id}` and their input items at
`GET /v1/responses/{id}/input_items` (another caller's are a 404, as unknown ones are). Their paths are in the
route table (app/server/routes.py).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.common.errors import GatewayError
from app.common.identity import identity_of
from app.engine.api import Engine
from app.fronts.base import Call, Limits
from app.fronts.responses import ResponsesFront
from app.fronts.responses_compact import CompactFront
from app.fronts.responses_pages import input_page
from app.server.edge import request_id_of
from app.server.serve import serve


class ResponsesApi:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.front = ResponsesFront(engine.responses)
        self.compact_front = CompactFront(engine.responses)

    async def create(self, request: Request) -> Response:
        return await serve(self.engine, request, self.front)

    async def compact(self, request: Request) -> Response:
        """`POST /v1/responses/compact`: the conversation summarised by the routed model."""
        return await serve(self.engine, request, self.compact_front)

    async def stored(self, request: Request) -> Response:
        config = self.engine.config
        call = Call(request_id_of(request.scope), identity_of(request.scope), Limits(config.max_messages, 0))
        response_id = request.path_params["response_id"]
        try:
            if request.method == "DELETE":
                body = await self.front.delete(call, response_id)
            else:
                body = await self.front.retrieve(call, response_id)
        except GatewayError as exc:
            return JSONResponse(self.front.error(exc), exc.status, headers={"x-request-id": call.request_id})
        return JSONResponse(body, headers={"x-request-id": call.request_id})

    async def input_items(self, request: Request) -> Response:
        """`GET /v1/responses/{id}/input_items`: the items a stored response answered, a page at a time."""
        config = self.engine.config
        call = Call(request_id_of(request.scope), identity_of(request.scope), Limits(config.max_messages, 0))
        try:
            page = input_page(request.query_params)
            body = await self.front.input_items(call, request.path_params["response_id"], page)
        except GatewayError as exc:
            return JSONResponse(self.front.error(exc), exc.status, headers={"x-request-id": call.request_id})
        return JSONResponse(body, headers={"x-request-id": call.request_id})
