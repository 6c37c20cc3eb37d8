"""Header and body deadlines for client connections, which uvicorn does not have.

uvicorn closes idle keep-alive connections (`timeout_keep_alive`) but, once a byte of a request has arrived,
waits for the rest forever: a client that sends its headers a byte at a time, or trickles its body, holds a
connection (and a file descriptor) as long as it likes. This is uvicorn's httptools protocol with two timers:
the headers must be complete `client_header_timeout` seconds after the connection opened or the next request
began, and the body `client_body_timeout` seconds after its headers. Past either, the client gets a 408 when no
response has started, and the connection is closed. The ASGI app sees a disconnect. The answers written here
without the app (the 408s, and uvicorn's 400 for bytes that are not HTTP) carry an `x-request-id` and the
gateway's JSON error, like every other response.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar, cast

from starlette.types import Scope
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.server.edge import REQUEST_ID_HEADER, new_request_id, refusal_body, request_id_of

log = logging.getLogger("toolsift.http")


class TimedHttpProtocol(HttpToolsProtocol):
    """Set the timeouts with `configure` (class-wide: one gateway per process) before serving."""

    header_timeout: ClassVar[float] = 10.0
    body_timeout: ClassVar[float] = 60.0

    @classmethod
    def configure(cls, header_timeout: float, body_timeout: float) -> None:
        cls.header_timeout = header_timeout
        cls.body_timeout = body_timeout

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._began = False  # bytes of a request have arrived whose headers are not complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._began = True
        if self._timer is None:  # a request after keep-alive; the first one counts from the connection
            self._arm(self.header_timeout, "headers")

    def on_headers_complete(self) -> None:
        self._disarm()
        self._began = False
        super().on_headers_complete()
        self._arm(self.body_timeout, "body")  # disarmed at once when the message has no body

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the connection is another protocol's from here
        super().handle_websocket_upgrade()

    def _arm(self, seconds: float, phase: str) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired, phase)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, phase: str) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if phase == "body":
            answer = self.cycle is not None and not self.cycle.response_started
            path = self.scope["path"]
        else:
            answer, path = self._began, ""
        if answer:
            limit = self.body_timeout if phase == "body" else self.header_timeout
            message = f"The request {phase} did not arrive within the gateway's {limit:g}s limit."
            request_id = request_id_of(cast(Scope, self.scope)) if phase == "body" else new_request_id()
            self._answer(408, "Request Timeout", refusal_body(path, message, "request_timeout"), request_id)
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "-"
            log.info("slow client %s: request %s incomplete after %gs, answered 408 and closed", client, phase, limit)
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes that are not HTTP, in the gateway's error shape and with a request id."""
        body = refusal_body("", f"{msg.rstrip('.')}: the bytes sent are not an HTTP/1.1 request.", "invalid_http")
        self._answer(400, "Bad Request", body, new_request_id())
        self.transport.close()

    def _answer(self, status: int, reason: str, body: bytes, request_id: str) -> None:
        """A response written straight to the socket (no ASGI app saw the request), then the connection closes."""
        head = [f"HTTP/1.1 {status} {reason}".encode()]
        head += [name + b": " + value for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json", f"content-length: {len(body)}".encode()]
        head += [REQUEST_ID_HEADER + b": " + request_id.encode(), b"connection: close"]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
