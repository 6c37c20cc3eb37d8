"""Each identity's limits: requests per minute, upstream tokens per UTC day, requests in flight at once. The one
place these rules live; the engine's entry (`Gateway.run`), the MCP front's HTTP edge and the count and model
endpoints all admit through it.

Counted in the keyed store (app/store/): with `store.counters_redis_url` (or else `store.redis_url`) every replica and
worker shares one count; otherwise in this process's memory. Requests per minute is a counter per calendar minute.
Tokens are a counter per UTC day that a request reserves its estimate in at admission, in one atomic increment,
and settles with what it spent when it ends (however it ends): parallel requests see each other's reservations, so
a budget admits what fits rather than every request that started before the first one finished. A request is
admitted while the day's count before its own reservation is under the budget, so the last one admitted may end
over it by its own size, never more. Concurrency is a set of leases that expire unless renewed, so a replica
that dies frees its slots within `LEASE_SECONDS`. A store that does not answer never fails a request: the limits
fail open, with a log line and the `toolsift_limits_unavailable` metric.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from app.common.errors import GatewayError
from app.common.identity import Identity
from app.engine.metrics import Metrics
from app.store import Key, Store, Stores, StoreUnavailable, unavailable_level
from app.store.eviction import eviction_problem

log = logging.getLogger("toolsift.limits")
NAMESPACE = "limit"  # in Redis: toolsift:limit:<identity>:<rpm:minute | tokens:day | concurrent>
LEASE_SECONDS = 30.0  # a slot's life unless renewed; renewed every third of it while its request runs
DAY = 86_400
IN_FLIGHT_RETRY_SECONDS = 5.0  # the day's budget is held by requests in flight, not spent: they settle soon


def limits_store(redis_url: str | None, stores: Stores) -> Store:
    """Redis when configured (shared by every replica), else memory: a few small counters per identity."""
    return stores.open(redis_url, 100_000, 16 * 1024 * 1024)


class LimitExceeded(GatewayError):
    """429 with how long to wait, in every front's shape (OpenAI's `rate_limit_exceeded`, Anthropic's
    `rate_limit_error`, a JSON-RPC error on the MCP front)."""

    def __init__(self, identity: Identity, limit: str, message: str, retry_after: float) -> None:
        super().__init__(429, message, "rate_limit_error", code="rate_limit_exceeded")
        self.limit = limit
        self.identity = identity
        self.retry_after = max(1.0, math.ceil(retry_after))


class Admission:
    """An admitted request: its concurrency slot (if its identity has a limit) held until `release`, and the
    tokens it reserved (in the day's counter `tokens`) until `settle`."""

    def __init__(self, limiter: Limiter | None, identity: Identity, holder: str | None, deadline: float) -> None:
        self.limiter = limiter
        self.identity = identity
        self.holder = holder
        self.deadline = deadline  # past it the slot is no longer renewed: a request that was never closed
        self.reserved = 0
        self.tokens: Key | None = None  # the day's counter the reservation is in

    async def settle(self, spent: int) -> None:
        """Replace the reservation with the tokens the request spent (once; later calls do nothing)."""
        if self.limiter is not None and self.tokens is not None:
            key, self.tokens = self.tokens, None
            self.limiter._reserved[self.identity.id] -= self.reserved
            await self.limiter._adjust(key, max(spent, 0) - self.reserved)

    async def release(self) -> None:
        """Free the slot; a reservation not settled by now is taken back whole (the request spent nothing)."""
        await self.settle(0)
        if self.limiter is not None and self.holder is not None:
            await self.limiter._release(self)
            self.holder = None


class Limiter:
    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        max_request_seconds: float,
        clock: Callable[[], float] = time.time,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.max_request_seconds = max_request_seconds
        self.clock = clock
        self.lease_seconds = lease_seconds
        self._held: set[Admission] = set()
        self._reserved: Counter[str] = Counter()  # tokens this process's requests in flight hold, by identity
        self._renewer: asyncio.Task[None] | None = None

    async def admit(
        self,
        identity: Identity,
        *,
        hold: bool = True,
        counted: bool = True,
        spends: bool = True,
        reserve: Callable[[], Awaitable[int]] | None = None,
    ) -> Admission:
        """Count a request against `identity`'s limits; raise `LimitExceeded` when one is reached. A request that
        does not `hold` (an MCP client's stream that waits for messages, its session's end) counts as a request of
        its minute but takes no concurrency slot: a stream open for hours would hold one throughout. One not
        `counted` (a run_task inside an MCP request that was) takes neither. One that never `spends` upstream tokens
        (a token count, a model look-up) is not refused for the day's tokens. `reserve` estimates the request's
        upstream tokens (asked last, only of an identity with a day's budget, as counting a prompt has a cost),
        held in the day's count until the admission is settled or released."""
        limits = identity.limits
        now = self.clock()
        admission = Admission(self, identity, None, time.monotonic() + self.max_request_seconds)
        try:
            if limits.concurrent is not None and hold and counted:
                holder = secrets.token_hex(8)
                if not await self.store.lease(self._key(identity, "concurrent"), holder, limits.concurrent,
                                              self.lease_seconds):  # fmt: skip
                    raise self._refused(identity, "concurrent", f"{limits.concurrent} requests at once", 1.0)
                admission.holder = holder
                self._hold(admission)
            if limits.requests_per_minute is not None and counted:
                minute = int(now // 60)
                count = await self.store.incr(self._key(identity, f"rpm:{minute}"), 1, 60.0)
                if count > limits.requests_per_minute:
                    raise self._refused(
                        identity,
                        "requests_per_minute",
                        f"{limits.requests_per_minute} requests a minute",
                        60 - now % 60,
                    )
            if limits.tokens_per_day is not None and spends:
                tokens = max(await reserve(), 0) if reserve is not None else 0
                await self._reserve(admission, limits.tokens_per_day, tokens, now)
        except StoreUnavailable as exc:
            self._failed_open(exc)
        except BaseException:
            await admission.release()  # refused (or cancelled) after a slot was taken: it goes back
            raise
        return admission

    async def _reserve(self, admission: Admission, budget: int, tokens: int, now: float) -> None:
        """Add the estimate to the day's count in one atomic step and refuse when the count before it was already
        at the budget (taking it back): every replica's requests in flight see each other's reservations."""
        key = self._key(admission.identity, f"tokens:{int(now // DAY)}")
        total = await self.store.incr(key, tokens, DAY + 3600.0)
        if total - tokens >= budget:
            if tokens:
                await self.store.incr(key, -tokens)
            held = self._reserved[admission.identity.id]  # this process's requests in flight: they end soon
            what = f"{budget:,} upstream tokens a day" + (", requests in flight included" if held else "")
            retry = IN_FLIGHT_RETRY_SECONDS if total - tokens - held < budget else DAY - now % DAY
            raise self._refused(admission.identity, "tokens_per_day", what, retry)
        if tokens:
            admission.reserved, admission.tokens = tokens, key
            self._reserved[admission.identity.id] += tokens

    async def _adjust(self, key: Key, tokens: int) -> None:
        if tokens == 0:
            return
        try:
            await self.store.incr(key, tokens, DAY + 3600.0)
        except StoreUnavailable as exc:
            self._failed_open(exc)

    async def check_store(self, stores: Stores, redis_url: str | None) -> str | None:
        """Warn (once, at start-up) when the Redis that holds the counters may evict them."""
        if not redis_url:
            return None
        problem = await eviction_problem(stores.client(redis_url))
        if problem is not None:
            log.warning("%s", problem)
        return problem

    async def aclose(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
        for admission in list(self._held):
            await admission.release()
        await self.store.aclose()

    def _key(self, identity: Identity, name: str) -> Key:
        return Key(NAMESPACE, identity.id, name)

    def _refused(self, identity: Identity, limit: str, what: str, retry_after: float) -> LimitExceeded:
        self.metrics.limited.labels(identity.id, limit).inc()
        log.info("limit identity=%s limit=%s", identity.id, limit)
        message = f"Rate limit reached for {identity.id!r}: at most {what}. Try again in {math.ceil(retry_after)} s."
        return LimitExceeded(identity, limit, message, retry_after)

    def _failed_open(self, exc: StoreUnavailable) -> None:
        self.metrics.limits_unavailable.inc()
        log.log(unavailable_level(exc), "limits not enforced (failing open): %s", exc)

    def _hold(self, admission: Admission) -> None:
        self._held.add(admission)
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew())

    async def _release(self, admission: Admission) -> None:
        self._held.discard(admission)
        assert admission.holder is not None
        try:
            await self.store.release(self._key(admission.identity, "concurrent"), admission.holder)
        except StoreUnavailable as exc:  # the slot expires on its own
            self._failed_open(exc)

    async def _renew(self) -> None:
        """Renew every held slot a third of the way through its life; a request past its deadline is dropped
        (its slot then expires), so a request that was never closed does not hold a slot for ever."""
        while self._held:
            await asyncio.sleep(self.lease_seconds / 3)
            for admission in list(self._held):
                if admission.holder is None:
                    continue
                if time.monotonic() > admission.deadline:
                    self._held.discard(admission)
                    continue
                limit = admission.identity.limits.concurrent or 1
                key = self._key(admission.identity, "concurrent")
                try:
                    await self.store.lease(key, admission.holder, limit, self.lease_seconds)
                except StoreUnavailable as exc:
                    self._failed_open(exc)
