"""The worker pool's lanes: a lane's bound holds while its jobs run, whether or not their callers still wait."""

from __future__ import annotations

import asyncio
import threading

from app.common.offload import Lane


async def test_a_caller_that_stops_waiting_keeps_its_jobs_slot_until_the_job_ends() -> None:
    lane = Lane(1)
    started, release, quick_ran = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(30)

    first = asyncio.create_task(lane.run(slow))
    await asyncio.to_thread(started.wait, 30)
    first.cancel()  # its caller leaves while the job runs on in the pool
    await asyncio.gather(first, return_exceptions=True)
    follower = asyncio.create_task(lane.run(quick_ran.set))
    # The pool has a free worker: the next job of the lane would run at once (within milliseconds) if it were let in.
    assert not await asyncio.to_thread(quick_ran.wait, 0.25), "the lane's next job ran beside the one still running"
    assert lane.busy and not follower.done()
    release.set()
    await follower
    assert quick_ran.is_set() and not lane.busy
