"""An ASGI response for Server-Sent Events that stops all work the moment the client goes away.

Starlette's StreamingResponse only notices a disconnect on the next write on newer ASGI servers, and never
closes the body iterator itself. Here a watcher cancels the stream on `http.disconnect`, and the iterator is
always closed, so the upstream request and pending tool calls are cancelled with it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send


class EventStreamResponse(Response):
    """`events` as SSE; with `timeout` (seconds), the stream is stopped then and ends with `timeout_event`."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncGenerator[str, None],
        headers: Mapping[str, str] | None = None,
        on_close: Callable[[bool], Awaitable[None] | None] | None = None,
        timeout: float | None = None,
        timeout_event: str = "",
    ) -> None:
        self.events = events
        self.status_code = 200
        self.background = None
        self.on_close = on_close
        self.timeout = timeout
        self.timeout_event = timeout_event
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no", **(headers or {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Plain asyncio: one watcher task and one timer that cancel the streaming task, which uncancels itself
        # when the cancellation was theirs. An anyio task group, or a timeout around every event, cost about a
        # tenth of a streamed request's CPU each in profiles.
        streamer = asyncio.current_task()
        assert streamer is not None
        stopped: str | None = None  # "gone" (client disconnected) or "timeout"

        def stop(reason: str) -> None:
            nonlocal stopped
            if stopped is None:
                stopped = reason
                streamer.cancel()

        async def watch_for_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            stop("gone")

        watcher = asyncio.ensure_future(watch_for_disconnect())
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.timeout, stop, "timeout") if self.timeout is not None else None
        open_body = finished = False  # open_body: the head is out and the body not yet ended
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            open_body = True
            async for event in self.events:
                await send({"type": "http.response.body", "body": event.encode(), "more_body": True})
            open_body = False
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            finished = True
        except OSError:
            pass  # the client went away mid-write
        except asyncio.CancelledError:
            if stopped is None:
                raise
            streamer.uncancel()  # our own cancellation: the request ends normally
            if stopped == "timeout" and open_body:
                with contextlib.suppress(OSError):
                    await send({"type": "http.response.body", "body": self.timeout_event.encode(), "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    finished = True
        finally:
            watcher.cancel()
            if timer is not None:
                timer.cancel()
            await self.events.aclose()
            if self.on_close is not None:
                result = self.on_close(finished)
                if result is not None:
                    await result
