"""Errors the gateway answers, independent of any wire format.

`GatewayError` carries what a client is told (status, message, type, param, code); each front renders it in its
own wire format (`error_body` is OpenAI's shape, the default). `RequestRefused` is what domain code (catalog,
sessions) raises when a request asks for something it cannot have; the server edge maps it to a 400.
"""

from __future__ import annotations

from typing import Any

from app.redaction import redact

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class GatewayError(Exception):
    """An error answered to the client as `{"error": {...}}` with an HTTP status."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.retry_after: float | None = None  # seconds the upstream asked us to wait, if it said

    @property
    def retryable(self) -> bool:
        """Worth another attempt: rate limits, overload, upstream 5xx, unreachable or timed-out upstreams."""
        return self.status in RETRYABLE_STATUS and self.code != "provider_not_configured"

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.param, self.code)

    def headers(self) -> dict[str, str]:
        """`Retry-After` on a 429 that says how long to wait (an identity's limit, or the upstream's own)."""
        if self.status == 429 and self.retry_after is not None:
            return {"retry-after": str(max(1, round(self.retry_after)))}
        return {}


def error_body(message: str, type: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """The error as the client sees it; configured secrets are redacted here, where error text leaves the gateway
    (an upstream may echo the key it was sent)."""
    param = redact(param) if param is not None else None
    return {"error": {"message": redact(message), "type": type, "param": param, "code": code}}


class RequestRefused(Exception):
    """A request that asks for something that does not exist or cannot be combined (a domain error)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code

    def as_gateway_error(self) -> GatewayError:
        return GatewayError(400, self.message, param=self.param, code=self.code)


def anthropic_error_body(message: str, type: str) -> dict[str, Any]:
    """The error in Anthropic's shape (the Messages front, and the edge's refusals on its paths); redacted alike."""
    return {"type": "error", "error": {"type": type, "message": redact(message)}}
