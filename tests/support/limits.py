"""Parallel requests against one identity's day budget, in memory or on Redis: every request is in flight (the
upstream holds its answer) until each has been admitted or refused, so none can settle before the others are
admitted, which is when a budget that only counts finished requests lets them all through."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from app.engine.admission import DAY
from app.engine.gateway import Gateway
from app.store import Key
from tests.support.gateway import chat_body, make_config
from tests.support.upstream import Upstream, completion

PARALLEL = 30
MAX_TOKENS = 1000
FITS = 3  # the budget holds three estimates (each a little more than MAX_TOKENS): three are admitted
SPENT = 15  # what the upstream reports each answer cost


def budget_config(**extra: Any) -> Any:
    keys = [{"name": "alice", "key": "gw-alice", "limits": {"tokens_per_day": FITS * MAX_TOKENS}}]
    return make_config(auth={"api_keys": keys}, **extra)


async def parallel_requests(client: httpx.AsyncClient, upstream: Upstream) -> list[int]:
    """The statuses of PARALLEL requests sent at once; the upstream answers none until all have got that far."""
    arrived: list[int] = []
    all_in = asyncio.Event()

    async def answer(request: httpx.Request) -> httpx.Response:
        arrived.append(1)
        await all_in.wait()
        return httpx.Response(200, json=completion("ok", usage=(10, SPENT - 10)))

    upstream.route.mock(side_effect=answer)
    headers = {"Authorization": "Bearer gw-alice"}
    body = chat_body("Say ok.", max_tokens=MAX_TOKENS)
    sent = [
        asyncio.create_task(client.post("/v1/chat/completions", json=body, headers=headers)) for _ in range(PARALLEL)
    ]
    while len(arrived) + sum(task.done() for task in sent) < PARALLEL:
        await asyncio.sleep(0.01)
    all_in.set()
    return [(await task).status_code for task in sent]


async def counted(gateway: Gateway) -> int:
    found = await gateway.limits.store.get(Key("limit", "alice", f"tokens:{int(time.time() // DAY)}"))
    return int(found or 0)
