"""A small pool of our own for CPU work whose size comes from input: indexing a request's tools, rebuilding the
catalog after a server's tools change. It keeps that work off the event loop, and it is not asyncio's default pool,
which token counting and file I/O share: indexing never queues behind them, nor they behind it. Two workers, so a
flood of such work waits its turn instead of taking every core.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

OFF_LOOP_BYTES = 256 * 1024  # JSON past this size is encoded, decoded or checked in a thread (milliseconds)
WORKERS = 2
THREAD_PREFIX = "toolsift-work"
_pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix=THREAD_PREFIX)


async def off_loop(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run `function` in the pool (with the caller's context variables: its request's secrets and log fields)."""
    context = contextvars.copy_context()
    call = functools.partial(context.run, function, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_pool, call)


async def in_thread_if_large(size: int, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function` in a thread when what it works on (`size` bytes, about) is past `OFF_LOOP_BYTES`; in place
    otherwise, where a thread hop would cost more than the work."""
    if size > OFF_LOOP_BYTES:
        return await asyncio.to_thread(function, *args, **kwargs)
    return function(*args, **kwargs)


class Lane:
    """At most `width` jobs of one kind in the pool at once; the rest wait here, on the event loop, not in the
    pool's queue, so a flood of one kind (token counts) never delays another kind's work (indexing).

    A job's slot is freed when the job ends, not when its caller stops waiting: a thread cannot be stopped, so a
    caller that leaves (a client gone, a wait timed out) used to free the slot while its job ran on, and callers
    that kept leaving filled the pool's queue with one kind of work, ahead of every other kind."""

    def __init__(self, width: int) -> None:
        self._slots = asyncio.Semaphore(width)

    @property
    def busy(self) -> bool:
        """Whether every slot is taken."""
        return self._slots.locked()

    async def run(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        await self._slots.acquire()
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        try:
            job = _pool.submit(context.run, functools.partial(function, *args, **kwargs))
        except BaseException:
            self._slots.release()
            raise
        job.add_done_callback(lambda _: _soon(loop, self._slots.release))
        return await asyncio.wrap_future(job)


def _soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
    """`callback` on `loop`, from the thread a job ended in (cancelled while queued: at once; running: when it
    returns); nothing once the loop is closed."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback)
