"""Each identity's limits, in memory: requests a minute, tokens a day, concurrent slots that a dead process does
not keep, and a store that does not answer failing open (counted, logged) rather than failing requests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.common.identity import Identity
from app.config.identities import IdentityLimits
from app.engine.admission import Limiter, LimitExceeded
from app.engine.metrics import Metrics
from app.store import Key, MemoryStore
from tests.support import Upstream, chat_body, completion, free_port, make_config


def _tokens(count: int) -> Callable[[], Awaitable[int]]:
    """A request's estimate of its upstream tokens, as the engine gives it."""

    async def estimate() -> int:
        return count

    return estimate


def _identity(**limits: Any) -> Identity:
    return Identity("alice", limits=IdentityLimits(**limits), named=True)


def _limiter(now: list[float], lease_seconds: float = 30.0) -> Limiter:
    return Limiter(MemoryStore(1000, 1 << 20), Metrics(), 600.0, clock=lambda: now[0], lease_seconds=lease_seconds)


async def test_requests_per_minute_reset_with_the_minute() -> None:
    now = [120.0]
    limiter, alice = _limiter(now), _identity(requests_per_minute=2)
    await limiter.admit(alice)
    await limiter.admit(alice)
    now[0] = 150.0
    with pytest.raises(LimitExceeded) as refused:
        await limiter.admit(alice)
    assert (
        refused.value.status == 429 and refused.value.retry_after == 30 and refused.value.limit == "requests_per_minute"
    )
    assert refused.value.headers() == {"retry-after": "30"}
    await limiter.admit(Identity("bob", limits=IdentityLimits(requests_per_minute=2)))  # bob counts his own
    now[0] = 180.0
    await limiter.admit(alice)


async def test_tokens_per_day_are_reserved_at_admission_and_settled_with_what_was_spent() -> None:
    now = [86_400.0 * 3 + 3600]
    limiter, alice = _limiter(now), _identity(tokens_per_day=100)
    first = await limiter.admit(alice, reserve=_tokens(60))
    second = await limiter.admit(alice, reserve=_tokens(60))  # 60 reserved before it: under the budget, so it may run
    with pytest.raises(LimitExceeded) as refused:  # 120 reserved: the two in flight hold the day's budget, for now
        await limiter.admit(alice, reserve=_tokens(60))
    assert refused.value.retry_after == 5 and "100 upstream tokens a day, requests in flight included" in (
        refused.value.message
    )
    await first.settle(10)
    await first.release()  # settled once: releasing takes nothing more back
    third = await limiter.admit(alice, reserve=_tokens(60))  # 70 before it
    await third.release()  # refused later (or spent nothing): its whole reservation goes back
    await second.settle(150)  # a request that started under the budget may end over it
    with pytest.raises(LimitExceeded) as spent:
        await limiter.admit(alice, reserve=_tokens(1))
    assert spent.value.retry_after == 86_400 - 3600 and "in flight" not in spent.value.message  # until tomorrow
    assert int(await limiter.store.get(Key("limit", "alice", "tokens:3")) or 0) == 160
    now[0] += 86_400
    await limiter.admit(alice, reserve=_tokens(60))


async def test_concurrent_slots_are_released_and_a_dead_holders_expire() -> None:
    now = [0.0]
    limiter, alice = _limiter(now, lease_seconds=0.3), _identity(concurrent=1)
    first = await limiter.admit(alice)
    with pytest.raises(LimitExceeded):
        await limiter.admit(alice)
    await first.release()
    held = await limiter.admit(alice)
    await asyncio.sleep(0.45)  # renewed while its request runs
    with pytest.raises(LimitExceeded):
        await limiter.admit(alice)
    other = Limiter(limiter.store, Metrics(), 600.0, lease_seconds=0.3)  # another process on the same store
    assert limiter._renewer is not None
    limiter._renewer.cancel()  # this process dies: nobody renews its slot
    await asyncio.sleep(0.45)
    await other.admit(alice)
    assert held.holder is not None


async def test_a_request_that_does_not_hold_counts_a_minute_but_takes_no_slot() -> None:
    """An MCP client's stream (GET /mcp) may stay open for hours: it counts as a request, never as a slot."""
    now = [0.0]
    limiter, alice = _limiter(now), _identity(concurrent=1, requests_per_minute=3)
    streams = [await limiter.admit(alice, hold=False) for _ in range(2)]
    assert all(stream.holder is None for stream in streams)
    await limiter.admit(alice)  # the one slot is free
    with pytest.raises(LimitExceeded) as refused:
        await limiter.admit(alice, hold=False)
    assert refused.value.limit == "requests_per_minute"


async def test_an_unreachable_store_fails_open_with_a_log_line_and_a_metric(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    keys = [{"name": "alice", "key": "gw-alice", "limits": {"requests_per_minute": 1, "concurrent": 1}}]
    config = make_config(auth={"api_keys": keys}, sessions={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    client, gateway = await gateway_factory(config)
    upstream.script(completion("one"), completion("two"))
    headers = {"Authorization": "Bearer gw-alice"}
    with caplog.at_level(logging.WARNING, "toolsift.limits"):
        for _ in range(2):
            response = await client.post("/v1/chat/completions", json=chat_body("x"), headers=headers)
            assert response.status_code == 200, response.text
    assert "limits not enforced (failing open)" in caplog.text
    assert gateway.metrics.limits_unavailable._value.get() >= 2


async def test_a_limited_request_is_429_with_retry_after_and_counted(upstream: Upstream, gateway_factory: Any) -> None:
    keys = [{"name": "alice", "key": "gw-alice", "limits": {"requests_per_minute": 1}}]
    client, _ = await gateway_factory(make_config(auth={"api_keys": keys}))
    upstream.script(completion("one"))
    headers = {"Authorization": "Bearer gw-alice"}
    assert (await client.post("/v1/chat/completions", json=chat_body("x"), headers=headers)).status_code == 200
    refused = await client.post("/v1/messages", json={**chat_body("x"), "max_tokens": 8}, headers=headers)
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["error"]["type"] == "rate_limit_error" and refused.json()["type"] == "error"
    metrics = (await client.get("/metrics", headers=headers)).text
    assert 'toolsift_limit_refusals_total{identity="alice",limit="requests_per_minute"} 1.0' in metrics
    assert 'toolsift_identity_requests_total{identity="alice",status="429"} 1.0' in metrics


async def test_a_request_refused_a_minute_costs_no_estimate_and_one_refused_tokens_holds_no_slot() -> None:
    """The estimate (a prompt counted in the worker pool) is asked only of a request the other limits admit; a
    request refused for the day's tokens gives its concurrency slot back."""
    now = [0.0]
    limiter, alice = _limiter(now), _identity(requests_per_minute=1, concurrent=1, tokens_per_day=100)
    estimates: list[int] = []

    async def estimate() -> int:
        estimates.append(1)
        return 200

    admitted = await limiter.admit(alice, reserve=estimate)  # 0 before it: admitted, holding 200
    await admitted.release()  # spent nothing: all of it back
    with pytest.raises(LimitExceeded) as minute:
        await limiter.admit(alice, reserve=estimate)
    assert minute.value.limit == "requests_per_minute" and len(estimates) == 1
    now[0] = 60.0
    spending = await limiter.admit(alice, reserve=estimate)
    await spending.settle(150)
    await spending.release()
    now[0] = 120.0
    with pytest.raises(LimitExceeded) as tokens:
        await limiter.admit(alice, reserve=estimate)
    assert tokens.value.limit == "tokens_per_day"
    now[0] = 180.0
    with pytest.raises(LimitExceeded) as again:  # the slot is free: refused for tokens again, not for concurrency
        await limiter.admit(alice, reserve=estimate)
    assert again.value.limit == "tokens_per_day"
