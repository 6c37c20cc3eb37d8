"""A request's work ends when its client goes away or its deadline passes, whatever phase it is in.

ASGI servers report a client that left only as an `http.disconnect` from `receive`, which nobody reads once the
body is in; without a reader, an abandoned request keeps its upstream call and MCP calls running to the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from starlette.types import Receive

T = TypeVar("T")


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


def watch_disconnect(receive: Receive, on_gone: Callable[[], None]) -> asyncio.Future[None]:
    """Call `on_gone` when the client disconnects (the request body must already have been read)."""

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        on_gone()

    return asyncio.ensure_future(watch())


async def run_while_connected(receive: Receive, work: Awaitable[T], timeout: float) -> T:
    """Await `work` in this task; cancel it and raise TimeoutError after `timeout` seconds, or ClientGone as soon
    as the client disconnects. Cancellation reaches the upstream request and every pending MCP call."""
    task = asyncio.current_task()
    assert task is not None
    gone = False

    def on_gone() -> None:
        nonlocal gone
        gone = True
        task.cancel()

    watcher = watch_disconnect(receive, on_gone)
    try:
        async with asyncio.timeout(timeout):
            return await work
    except asyncio.CancelledError:
        if not gone:
            raise
        task.uncancel()
        raise ClientGone from None
    finally:
        watcher.cancel()
