"""The one exit of every HTTP answer: configured secrets (and the calling request's own upstream key) are replaced
by `[redacted]` in every response body and stream event the gateway sends, whatever wrote it: a front's answer or
error, `run_task` over `/mcp`, a tool result, the admin API. A new route cannot forget it.

Matching is plain substring search (linear, as in app/common/redaction.py). A body sent whole gets its `content-length`
set to what is sent; a body streamed in parts with a declared length (a static file) is passed on as it is, since
its length went out first. A secret split across two stream events by an upstream is not seen whole here; the
engine's own texts (errors, tool results) are written whole, so theirs are.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.common import redaction


class RedactedAnswers:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None  # the response head, until the first body part shows what it says
        passing = False  # a declared-length body in parts: sent as it is

        async def redacted(message: Message) -> None:
            nonlocal held, passing
            kind = message["type"]
            if kind == "http.response.start":
                held = message
                return
            if kind != "http.response.body" or passing or not redaction.active():
                if held is not None:
                    await send(held)
                    held = None
                await send(message)
                return
            body = message.get("body", b"")
            more = message.get("more_body", False)
            if held is not None:
                headers = list(held.get("headers") or [])
                declared = any(name.lower() == b"content-length" for name, _ in headers)
                if declared and more:
                    passing = True
                    await send(held)
                    held = None
                    await send(message)
                    return
                body = redaction.redact_bytes(body)
                if declared:
                    length = str(len(body)).encode()
                    headers = [(n, length if n.lower() == b"content-length" else v) for n, v in headers]
                await send({**held, "headers": headers})
                held = None
            else:
                body = redaction.redact_bytes(body)
            await send({**message, "body": body})

        await self.app(scope, receive, redacted)
