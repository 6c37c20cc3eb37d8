"""The route table and the error-shape registry derived from it."""

from __future__ import annotations

import pytest

from app.fronts.shapes import ANTHROPIC, JSONRPC, OPENAI
from app.server.routes import ROUTES, openapi, routes
from app.server.surfaces import shape_for


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
    declared = [(entry.path, method) for entry in ROUTES for method in entry.methods]
    assert len(declared) == len(set(declared))
    assert {entry.path for entry in ROUTES if entry.direct} == {"/v1/chat/completions", "/v1/responses", "/v1/messages"}
    assert all(not entry.docs for entry in routes(api_docs=False))
    assert set(openapi("toolsift")["paths"]) >= {"/v1/chat/completions", "/v1/models/{model_id}", "/admin/search"}
