"""The route table, the fronts' declared routes and the error-shape registry derived from them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.common.errors import GatewayError
from app.core.model import JsonObject
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.fronts.base import Call
from app.fronts.routing import GET, FrontSpec, Route, View, ViewArgs
from app.fronts.shapes import ANTHROPIC, JSONRPC, OPENAI
from app.server import app as server_app
from app.server.app import create_app
from app.server.fronts import FRONTS
from app.server.mounting import Mounted, mount
from app.server.routes import ROUTES, openapi, routes
from app.server.surfaces import shape_for
from tests.support.gateway import make_config


def _mounted() -> list[Mounted]:
    engine = Engine(Gateway(make_config()))
    return [mounted for front in FRONTS for mounted in mount(front, engine)]


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        ("/v1/messages", ANTHROPIC),
        ("/v1/messages/count_tokens", ANTHROPIC),
        ("/v1/messages/nope", ANTHROPIC),
        ("/v1/messagesx", OPENAI),
        ("/mcp", JSONRPC),
        ("/mcp/anything", JSONRPC),
        ("/mcpx", OPENAI),
        ("/v1/chat/completions", OPENAI),
        ("/nope", OPENAI),
        ("", OPENAI),
    ],
)
def test_each_path_gets_its_fronts_error_shape(path: str, shape: object) -> None:
    assert shape_for(path) is shape


def test_the_shapes_render_each_refusal_in_their_wire_format() -> None:
    assert shape_for("/mcp").refusal(403, "no", "origin_not_allowed")["error"]["code"] == -32600
    # A missing key on /mcp is a JSON-RPC error too (its 401 status and WWW-Authenticate stay HTTP's), naming why.
    unauthenticated = shape_for("/mcp").unauthenticated("no")
    assert unauthenticated["jsonrpc"] == "2.0" and unauthenticated["error"]["code"] == -32600
    assert unauthenticated["error"]["data"] == {"status": 401, "code": "invalid_api_key"}
    assert shape_for("/v1/messages").refusal(403, "no", "x")["error"]["type"] == "permission_error"
    assert shape_for("/v1/messages").unauthenticated("no")["error"]["type"] == "authentication_error"
    assert shape_for("/v1/models").unrouted(404, "Not Found")["error"]["type"] == "not_found_error"


def test_every_path_is_declared_once_and_documented() -> None:
    fronts = _mounted()
    declared = [(m.route.path, method) for m in fronts for method in m.route.methods]
    declared += [(entry.path, method) for entry in ROUTES for method in entry.methods]
    assert len(declared) == len(set(declared))
    assert {m.route.path for m in fronts if m.route.direct} == {"/v1/chat/completions", "/v1/responses", "/v1/messages"}
    assert all(not entry.docs for entry in routes(api_docs=False))
    paths = openapi("toolsift", fronts)["paths"]
    expected = {"/v1/chat/completions", "/v1/responses/{response_id}", "/v1/models/{model_id}", "/admin/search"}
    assert set(paths) >= expected
    assert paths["/v1/messages/count_tokens"]["post"]["tags"] == ["messages"]


class _Echo(Exception):
    pass


def _echo_front() -> FrontSpec:
    """A front written as a new one would be: its routes declared, nothing of HTTP; mounted by one line."""

    async def echo(call: Call, args: ViewArgs) -> JsonObject:
        if args.path["word"] == "bad":
            raise GatewayError(400, "No bad words.", code="bad_word")
        return {"echo": args.path["word"], "loud": args.query.get("loud") == "1", "caller": call.identity.id}

    def error(error: GatewayError) -> JsonObject:
        return {"problem": error.message}

    def echo_routes(_: Engine) -> tuple[Route, ...]:
        return (Route("/v1/echo/{word}", GET, "Echo a word", View(echo, error)),)

    return FrontSpec("echo", "/v1/echo", OPENAI, echo_routes)


async def test_a_new_front_is_its_declaration_and_one_mounting_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_app, "FRONTS", (*FRONTS, _echo_front()))
    app = create_app(Engine(Gateway(make_config(api_docs=True))))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        answered = await client.get("/v1/echo/hello?loud=1")
        refused = await client.get("/v1/echo/bad")
        documented: dict[str, Any] = (await client.get("/openapi.json")).json()
    assert answered.status_code == 200 and answered.json() == {"echo": "hello", "loud": True, "caller": "anonymous"}
    assert answered.headers["x-request-id"].startswith("req_")
    assert refused.status_code == 400 and refused.json() == {"problem": "No bad words."}
    assert documented["paths"]["/v1/echo/{word}"]["get"]["tags"] == ["echo"]
