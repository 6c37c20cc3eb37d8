"""What a conversation discovered, kept between requests that share a session id.

Bounded (least recently used sessions go first) and expiring, so a gateway that serves many clients for
months uses flat memory. Without a session id a request starts from the config and its history.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable


class SessionStore:
    def __init__(self, ttl_seconds: float, max_sessions: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl_seconds
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: OrderedDict[str, tuple[float, list[str]]] = OrderedDict()

    def tools(self, session_id: str) -> list[str]:
        found = self._sessions.get(session_id)
        if found is None:
            return []
        stamp, names = found
        if self._clock() - stamp > self.ttl:
            del self._sessions[session_id]
            return []
        return list(names)

    def remember(self, session_id: str, names: Iterable[str]) -> None:
        known = self.tools(session_id)
        known.extend(name for name in names if name not in known)
        self._sessions[session_id] = (self._clock(), known)
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

    def __len__(self) -> int:
        return len(self._sessions)
