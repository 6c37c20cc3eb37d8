"""Each front's error shape: how its clients read an error. A front carries its own (`Front.shape`), and renders
its errors with it; the server edge renders the refusals it answers itself (a foreign origin, a missing key, an
unknown path, a slow client) with the shape of the front the path belongs to (app/server/shapes.py), so a client's
SDK can read every one of them.
"""

from __future__ import annotations

from typing import Any

from app.codecs.anthropic.answers import error_type
from app.common.errors import GatewayError, anthropic_error_body, error_body
from app.common.redaction import redact

JSONRPC_INVALID_REQUEST = -32600


class OpenAIShape:
    """OpenAI's error object, `{"error": {"message", "type", "param", "code"}}`: the default."""

    def refusal(self, status: int, message: str, code: str) -> dict[str, Any]:
        """A request refused before any work (origin, host, media type, timeouts, malformed HTTP)."""
        return error_body(message, "invalid_request_error", code=code)

    def unauthenticated(self, message: str) -> dict[str, Any]:
        """No valid gateway key."""
        return error_body(message, "invalid_request_error", code="invalid_api_key")

    def unrouted(self, status: int, message: str) -> dict[str, Any]:
        """No such path (404), or not with this method (405)."""
        return error_body(message, "not_found_error" if status == 404 else "invalid_request_error")

    def failure(self, error: GatewayError) -> dict[str, Any]:
        """A refusal the engine decided (an identity's tool set or limit: 403, 429), answered by the edge."""
        return error.body()


class AnthropicShape(OpenAIShape):
    """Anthropic's `{"type": "error", "error": {"type", "message"}}`, its type naming the kind of refusal."""

    def refusal(self, status: int, message: str, code: str) -> dict[str, Any]:
        return anthropic_error_body(message, "permission_error" if status == 403 else "invalid_request_error")

    def unauthenticated(self, message: str) -> dict[str, Any]:
        return anthropic_error_body(message, "authentication_error")

    def unrouted(self, status: int, message: str) -> dict[str, Any]:
        return anthropic_error_body(message, "not_found_error" if status == 404 else "invalid_request_error")

    def failure(self, error: GatewayError) -> dict[str, Any]:
        return anthropic_error_body(error.message, error_type(error), error.fields)


class JsonRpcShape(OpenAIShape):
    """A JSON-RPC error for every refusal of a JSON-RPC message, `data` naming the HTTP status and the reason's
    code. A missing key keeps its HTTP status and `WWW-Authenticate` (MCP's authorization is HTTP's), with a
    JSON-RPC body an MCP client can read."""

    def refusal(self, status: int, message: str, code: str) -> dict[str, Any]:
        return _jsonrpc_error(message, {"status": status, "code": code})

    def unauthenticated(self, message: str) -> dict[str, Any]:
        return _jsonrpc_error(message, {"status": 401, "code": "invalid_api_key"})

    def unrouted(self, status: int, message: str) -> dict[str, Any]:
        return _jsonrpc_error(message, {"status": status, "code": "not_found" if status == 404 else "bad_method"})

    def failure(self, error: GatewayError) -> dict[str, Any]:
        data: dict[str, Any] = {"status": error.status, "code": error.code}
        if error.retry_after is not None:
            data["retry_after"] = error.retry_after
        return _jsonrpc_error(error.message, data)


def _jsonrpc_error(message: str, data: dict[str, Any]) -> dict[str, Any]:
    error = {"code": JSONRPC_INVALID_REQUEST, "message": redact(message), "data": data}
    return {"jsonrpc": "2.0", "id": None, "error": error}


ErrorShape = OpenAIShape  # the interface every shape implements


# One of each: the fronts carry them, and the edge's registry compares them.
OPENAI, ANTHROPIC, JSONRPC = OpenAIShape(), AnthropicShape(), JsonRpcShape()
