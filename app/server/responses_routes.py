"""The Responses API's routes: `POST /v1/responses` through the common pipeline, and the caller's stored
responses at `GET`/`DELETE /v1/responses/{id}` (another caller's are a 404, as unknown ones are)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.engine.gateway import Gateway
from app.errors import GatewayError
from app.fronts.base import Call, Limits
from app.fronts.responses import ResponsesFront
from app.server.auth import identity_of
from app.server.edge import request_id_of
from app.server.serve import serve


def response_routes(gateway: Gateway) -> list[Route]:
    front = ResponsesFront(gateway.responses)

    async def create(request: Request) -> Response:
        return await serve(gateway, request, front)

    async def stored(request: Request) -> Response:
        config = gateway.config
        call = Call(request_id_of(request.scope), identity_of(request.scope), Limits(config.max_messages, 0))
        response_id = request.path_params["response_id"]
        try:
            if request.method == "DELETE":
                body = await front.delete(call, response_id)
            else:
                body = await front.retrieve(call, response_id)
        except GatewayError as exc:
            return JSONResponse(front.error(exc), exc.status, headers={"x-request-id": call.request_id})
        return JSONResponse(body, headers={"x-request-id": call.request_id})

    return [
        Route("/v1/responses", create, methods=["POST"]),
        Route("/v1/responses/{response_id}", stored, methods=["GET", "DELETE"]),
    ]
