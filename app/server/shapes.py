"""Each front's error shape, and the registry that picks one by path: every refusal the edge answers itself (a
foreign origin, a missing key, an unknown path, a slow client) is rendered by the shape of the front it was
addressed to, so a client's SDK can read it.

A front's own errors (a bad request body, an upstream failure) are the front's to render (app/fronts/); these are
the ones answered before any front runs, and the engine's refusals (an identity's tool set, models, limits)
where the edge answers them itself (the MCP front).
"""

from __future__ import annotations

from dataclasses import dataclass
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
        return anthropic_error_body(error.message, error_type(error))


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


@dataclass(frozen=True)
class Surface:
    """A front as the edge sees it: the path prefix it answers under and its error shape."""

    name: str
    prefix: str
    shape: ErrorShape


class ErrorShapes:
    """Path prefix -> error shape: the longest prefix that names the path (the path itself or a parent of it)
    wins; paths under no front's prefix get `default`'s."""

    def __init__(self, surfaces: list[Surface], default: ErrorShape) -> None:
        self.surfaces = sorted({surface.prefix: surface for surface in surfaces}.values(), key=_longest_first)
        self.default = default

    def for_path(self, path: str) -> ErrorShape:
        for surface in self.surfaces:
            if path == surface.prefix or path.startswith(surface.prefix + "/"):
                return surface.shape
        return self.default


def _longest_first(surface: Surface) -> int:
    return -len(surface.prefix)
