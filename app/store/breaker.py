"""A circuit breaker for a store's backend: while it is down or hung, a request pays one timeout, not one per
operation.

Every store opened on the same Redis (sessions, stored responses, limits) shares one `Circuit`, so a chat that
reads three limits and a session waits for at most one timeout: the first operation that fails opens the circuit,
and every operation after it fails at once (`StoreUnavailable`) until `cooldown` seconds have passed. Then one
operation is let through as a probe: if it answers, the circuit closes; if not, it stays open for another
`cooldown`. Only failures of the backend itself (connection refused or lost, a timeout) open it; an answer that
refuses one command (a full Redis, a key of another type) is the backend answering.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.store.base import CircuitOpen

T = TypeVar("T")
log = logging.getLogger("toolsift.store")
COOLDOWN_SECONDS = 1.0  # how long an open circuit refuses before it lets one probe through


class Circuit:
    """Closed (operations pass), open (they fail at once) or half open (one probe passes, the rest fail at once)."""

    def __init__(
        self,
        trips: tuple[type[BaseException], ...],
        cooldown: float = COOLDOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.trips = trips
        self.cooldown = cooldown
        self._clock = clock
        self._open_until: float | None = None
        self._probing = False
        self.failures = 0  # operations that reached the backend and failed: each may have waited for a timeout
        self.refused = 0  # operations failed at once while the circuit was open

    @property
    def open(self) -> bool:
        return self._open_until is not None

    def available(self) -> bool:
        """False while the circuit would refuse the next operation: callers can say so before they try."""
        return self._open_until is None or (not self._probing and self._clock() >= self._open_until)

    async def run(self, operation: Callable[[], Awaitable[T]]) -> T:
        """The operation's result; `StoreUnavailable` at once while the circuit is open. A failure in `trips`
        opens it (and is raised as it came, for the store to translate)."""
        probe = self._admit()
        try:
            result = await operation()
        except self.trips as exc:
            self.failures += 1
            if self._open_until is None:
                log.warning(
                    "store unavailable (%s): its operations fail at once for %gs, then one probes it",
                    type(exc).__name__,
                    self.cooldown,
                )
            self._open_until = self._clock() + self.cooldown
            raise
        except Exception:  # the backend answered, if with a refusal
            self._open_until = None
            raise
        finally:
            if probe:
                self._probing = False
        if self._open_until is not None:
            log.warning("store answers again")
        self._open_until = None
        return result

    def _admit(self) -> bool:
        """True when this operation is the half-open circuit's probe."""
        if self._open_until is None:
            return False
        if self._probing or self._clock() < self._open_until:
            self.refused += 1
            raise CircuitOpen("store unavailable: circuit open after a failure")
        self._probing = True
        return True
