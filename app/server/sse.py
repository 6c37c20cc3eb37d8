"""An ASGI response for Server-Sent Events that owns the whole life of a streamed request.

From its first moment (before the upstream has sent anything) to its last: the request deadline ends it with an
error event, a client that leaves cancels it, and `: keep-alive` comments go out whenever nothing else has for
`keepalive` seconds, whether the upstream is slow to start, slow between chunks, or tools are running. The head
is held back until the first event or the first keep-alive, so an error before either keeps its HTTP status.
The event iterator is always closed, so the upstream request and pending tool calls are cancelled with it. The
events' framing is the fronts' wire format (app/fronts/sse_wire.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from app.common.errors import GatewayError
from app.fronts.sse_wire import KEEPALIVE, error_sse
from app.server.disconnect import watch_disconnect

CLIENT_GONE = 499  # the status logged for a client that left before the end (nginx's convention)
ErrorAnswer = tuple[int, dict[str, Any]]  # HTTP status and OpenAI error body


class EventStreamResponse(Response):
    """`events` as SSE, ended by `deadline` (seconds) with `deadline_error`; `error` turns an exception raised by
    `events` into the answer; `on_close` gets the HTTP status sent (499 when the client left first)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncGenerator[str, None],
        *,
        error: Callable[[Exception], ErrorAnswer],
        deadline: float,
        deadline_error: ErrorAnswer,
        keepalive: float,
        keepalive_text: str = KEEPALIVE,
        headers: Mapping[str, str] | None = None,
        on_close: Callable[[int], Awaitable[None] | None] | None = None,
    ) -> None:
        self.events = events
        self.status_code = 200
        self.background = None
        self.error = error
        self.deadline = deadline
        self.deadline_error = deadline_error
        self.keepalive = keepalive
        self.keepalive_text = keepalive_text
        self.extra_headers = dict(headers or {})
        self.on_close = on_close
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no", **self.extra_headers})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Plain asyncio: one watcher task and one timer cancel the streaming task, which uncancels itself when the
        # cancellation was theirs; one keep-alive task writes only when nothing else has. An anyio task group, or
        # a timeout around every event, cost about a tenth of a streamed request's CPU each in profiles.
        streamer = asyncio.current_task()
        assert streamer is not None
        loop = asyncio.get_running_loop()
        stopped: str | None = None  # "gone" (client disconnected) or "timeout"
        head_sent = ended = False
        last_write = loop.time()
        writing = asyncio.Lock()  # the streamer and the keep-alive task never interleave their writes

        def stop(reason: str) -> None:
            nonlocal stopped
            if stopped is None:
                stopped = reason
                streamer.cancel()

        async def write(body: str, more_body: bool = True) -> None:
            nonlocal head_sent, last_write, ended
            async with writing:
                if ended:
                    return  # a keep-alive that queued behind the last message
                ended = not more_body
                if not head_sent:
                    head_sent = True
                    await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
                await send({"type": "http.response.body", "body": body.encode(), "more_body": more_body})
                last_write = loop.time()

        async def keep_alive() -> None:
            while True:
                due = last_write + self.keepalive - loop.time()
                if due > 0:
                    await asyncio.sleep(due)
                    continue
                try:
                    await write(self.keepalive_text)
                except OSError:
                    return  # the client is gone; the watcher ends the stream

        async def fail(answer: ErrorAnswer, headers: Mapping[str, str] | None = None) -> int:
            """End with `answer`: its own HTTP response (with `headers`) before the head, an error event after it."""
            timer.cancel()  # nothing may cancel the streamer while it answers
            watcher.cancel()
            pinger.cancel()
            await asyncio.wait({pinger})
            status, body = answer
            with contextlib.suppress(OSError):
                if not head_sent:
                    await JSONResponse(body, status, headers={**self.extra_headers, **(headers or {})})(
                        scope, receive, send
                    )
                    return status
                await write(error_sse(body), more_body=False)
            return 200

        watcher = watch_disconnect(receive, lambda: stop("gone"))
        timer = loop.call_later(self.deadline, stop, "timeout")
        pinger = asyncio.ensure_future(keep_alive())
        status = CLIENT_GONE
        try:
            async for event in self.events:
                await write(event)
            await write("", more_body=False)
            status = 200
        except OSError:
            pass  # the client went away mid-write
        except asyncio.CancelledError:
            if stopped is None:
                raise
            streamer.uncancel()  # our own cancellation: the request ends normally
            if stopped == "timeout":
                status = await fail(self.deadline_error)
        except Exception as exc:  # raised by `events` before it could answer with an error event itself
            status = await fail(self.error(exc), exc.headers() if isinstance(exc, GatewayError) else None)
        finally:
            watcher.cancel()
            timer.cancel()
            pinger.cancel()
            await self.events.aclose()
            if self.on_close is not None:
                result = self.on_close(status)
                if result is not None:
                    await result
