"""An ASGI response for Server-Sent Events that stops all work the moment the client goes away.

Starlette's StreamingResponse only notices a disconnect on the next write on newer ASGI servers, and never
closes the body iterator itself. Here a watcher cancels the stream on `http.disconnect`, and the iterator is
always closed, so the upstream request and pending tool calls are cancelled with it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send


class EventStreamResponse(Response):
    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncGenerator[str, None],
        headers: Mapping[str, str] | None = None,
        on_close: Callable[[bool], Awaitable[None] | None] | None = None,
    ) -> None:
        self.events = events
        self.status_code = 200
        self.background = None
        self.on_close = on_close
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no", **(headers or {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = False
        async with anyio.create_task_group() as group:

            async def watch_for_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(watch_for_disconnect)
            try:
                await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
                async for event in self.events:
                    await send({"type": "http.response.body", "body": event.encode(), "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                finished = True
            except OSError:
                pass  # the client went away mid-write
            finally:
                with anyio.CancelScope(shield=True):
                    await self.events.aclose()
                    if self.on_close is not None:
                        result = self.on_close(finished)
                        if result is not None:
                            await result
                group.cancel_scope.cancel()
