"""Each identity's limits: requests per minute, upstream tokens per UTC day, requests in flight at once. The one
place these rules live; the engine's entry (`Gateway.run`) and the MCP front's HTTP edge both admit through it.

Counted in the keyed store (app/store/), so with `sessions.redis_url` every replica and worker shares one count;
otherwise in this process's memory. Requests per minute is a counter per calendar minute; tokens a counter per
UTC day, checked before a request and added after it (a request that starts under the budget may end over it);
concurrency is a set of leases that expire unless renewed, so a replica that dies frees its slots within
`LEASE_SECONDS`. A store that does not answer never fails a request: the limits fail open, with a log line and
the `toolsift_limits_unavailable` metric.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Callable

from app.engine.metrics import Metrics
from app.errors import GatewayError
from app.identity import Identity
from app.store import STORE_TIMEOUT, Key, Store, StoreUnavailable, open_store

log = logging.getLogger("toolsift.limits")
NAMESPACE = "limit"  # in Redis: toolsift:limit:<identity>:<rpm:minute | tokens:day | concurrent>
LEASE_SECONDS = 30.0  # a slot's life unless renewed; renewed every third of it while its request runs
DAY = 86_400


def limits_store(redis_url: str | None, timeout: float = STORE_TIMEOUT) -> Store:
    """Redis when configured (shared by every replica), else memory: a few small counters per identity."""
    return open_store(redis_url, 100_000, 16 * 1024 * 1024, timeout=timeout)


class LimitExceeded(GatewayError):
    """429 with how long to wait, in every front's shape (OpenAI's `rate_limit_exceeded`, Anthropic's
    `rate_limit_error`, a JSON-RPC error on the MCP front)."""

    def __init__(self, identity: Identity, limit: str, message: str, retry_after: float) -> None:
        super().__init__(429, message, "rate_limit_error", code="rate_limit_exceeded")
        self.limit = limit
        self.identity = identity
        self.retry_after = max(1.0, math.ceil(retry_after))


class Admission:
    """An admitted request: its concurrency slot (if its identity has a limit), held until `release`."""

    def __init__(self, limiter: Limiter | None, identity: Identity, holder: str | None, deadline: float) -> None:
        self.limiter = limiter
        self.identity = identity
        self.holder = holder
        self.deadline = deadline  # past it the slot is no longer renewed: a request that was never closed

    async def release(self) -> None:
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
        self._renewer: asyncio.Task[None] | None = None

    async def admit(self, identity: Identity, *, hold: bool = True) -> Admission:
        """Count a request against `identity`'s limits; raise `LimitExceeded` when one is reached. A request that
        does not `hold` (an MCP client's stream that waits for messages, its session's end) counts as a request of
        its minute but takes no concurrency slot: a stream open for hours would hold one throughout."""
        limits = identity.limits
        now = self.clock()
        admission = Admission(self, identity, None, time.monotonic() + self.max_request_seconds)
        try:
            if limits.tokens_per_day is not None:
                spent = await self.store.get(self._key(identity, f"tokens:{int(now // DAY)}"))
                if spent is not None and int(spent) >= limits.tokens_per_day:
                    raise self._refused(
                        identity, "tokens_per_day", f"{limits.tokens_per_day:,} upstream tokens a day", DAY - now % DAY
                    )
            if limits.concurrent is not None and hold:
                holder = secrets.token_hex(8)
                if not await self.store.lease(self._key(identity, "concurrent"), holder, limits.concurrent,
                                              self.lease_seconds):  # fmt: skip
                    raise self._refused(identity, "concurrent", f"{limits.concurrent} requests at once", 1.0)
                admission.holder = holder
                self._hold(admission)
            if limits.requests_per_minute is not None:
                minute = int(now // 60)
                count = await self.store.incr(self._key(identity, f"rpm:{minute}"), 1, 60.0)
                if count > limits.requests_per_minute:
                    await admission.release()
                    raise self._refused(
                        identity,
                        "requests_per_minute",
                        f"{limits.requests_per_minute} requests a minute",
                        60 - now % 60,
                    )
        except StoreUnavailable as exc:
            self._failed_open(exc)
        return admission

    async def spend(self, identity: Identity, tokens: int) -> None:
        """Add a finished request's upstream tokens to today's count of `identity`."""
        if identity.limits.tokens_per_day is None or tokens <= 0:
            return
        try:
            await self.store.incr(self._key(identity, f"tokens:{int(self.clock() // DAY)}"), tokens, DAY + 3600.0)
        except StoreUnavailable as exc:
            self._failed_open(exc)

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
        log.warning("limits not enforced (failing open): %s", exc)

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
