"""Errors the gateway answers, independent of any wire format.

`GatewayError` carries what a client is told (status, message, type, param, code); each front renders it in its
own wire format (`error_body` is OpenAI's shape, the default). `RequestRefused` is what domain code (catalog,
sessions) raises when a request asks for something it cannot have; the server edge maps it to a 400.
"""

from __future__ import annotations

from typing import Any

from app.common.redaction import redact, redact_value

SOURCE_HEADER = "x-toolsift-error-source"  # who gave an error the gateway passes on (an upstream, its status)

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
        source: str | None = None,
        fields: dict[str, Any] | None = None,
    ) -> None:
        """`source`: who said it, when not the gateway (an upstream, with its status), told in a header so the
        message stays the upstream's own; `fields`: the other fields of an upstream's error object (`details`,
        ...), which a client's SDK may act on, passed on in the error object."""
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.source = source
        self.fields = fields or {}
        self.retry_after: float | None = None  # seconds the upstream asked us to wait, if it said

    @property
    def retryable(self) -> bool:
        """Worth another attempt: rate limits, overload, upstream 5xx, unreachable or timed-out upstreams."""
        return self.status in RETRYABLE_STATUS and self.code != "provider_not_configured"

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.param, self.code, self.fields)

    def headers(self) -> dict[str, str]:
        """`Retry-After` on a 429 that says how long to wait (an identity's limit, or the upstream's own), and
        `x-toolsift-error-source` on an error an upstream gave."""
        headers = {SOURCE_HEADER: redact(self.source)} if self.source else {}
        if self.status == 429 and self.retry_after is not None:
            headers["retry-after"] = str(max(1, round(self.retry_after)))
        return headers


def error_body(
    message: str, type: str, param: str | None = None, code: str | None = None, fields: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The error as the client sees it, with an upstream's other `fields`; configured secrets are redacted here,
    where error text leaves the gateway (an upstream may echo the key it was sent)."""
    param = redact(param) if param is not None else None
    extra = redact_value(fields) if fields else {}
    return {"error": {**extra, "message": redact(message), "type": type, "param": param, "code": code}}


class RequestRefused(Exception):
    """A request that asks for something that does not exist or cannot be combined (a domain error)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code

    def as_gateway_error(self) -> GatewayError:
        return GatewayError(400, self.message, param=self.param, code=self.code)


def anthropic_error_body(message: str, type: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error in Anthropic's shape (the Messages front, and the edge's refusals on its paths), with an
    upstream's other `fields` (`details`, which the SDKs act on); redacted alike."""
    extra = redact_value(fields) if fields else {}
    return {"type": "error", "error": {**extra, "type": type, "message": redact(message)}}
