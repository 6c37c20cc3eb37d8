"""How much of what a server says on the side (its log messages, its stderr) reaches the gateway's log.

A server is untrusted input: left alone, one writing 100 MB of stderr wrote 139 MB into the gateway's log, and
every line cost the event loop a log record. So each server gets a budget of lines per second, with a burst; past
it lines are counted, not logged, and the count is logged with the next line that passes and handed to
`on_dropped` (the gateway's `toolsift_mcp_output_dropped` counter).
"""

from __future__ import annotations

import time
from collections.abc import Callable

Dropped = Callable[[str, str, int], None]  # (server, what: "log_messages", "stderr_lines" or "stderr_bytes", count)


class Chatter:
    """One server's budget for one kind of output: `rate` lines a second, `burst` at once."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst = rate, burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()
        self.dropped = 0  # lines not logged since the last one that was
        self.dropped_bytes = 0

    def allow(self) -> bool:
        """Whether the next line may be logged; a line that may not is counted as dropped by the caller."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def drop(self, lines: int = 1, size: int = 0) -> None:
        self.dropped += lines
        self.dropped_bytes += size

    def take_dropped(self) -> tuple[int, int]:
        """Lines (and bytes) dropped since the last call, to log beside the line that now passes."""
        counts = self.dropped, self.dropped_bytes
        self.dropped = self.dropped_bytes = 0
        return counts
