"""Who is calling: the caller's `Identity`, which keys every piece of per-caller state (sessions, stored
responses, MCP tool lists) so one caller's state is never another's.

A domain type, low in the tree so the engine and the fronts can use it; how a gateway key becomes an identity
(constant-time key checks) is the server edge's job (app/server/auth.py), which records it in the ASGI scope.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCOPE_KEY = "toolsift.identity"


@dataclass(frozen=True)
class Identity:
    """Who is calling. `id` keys per-caller state (sessions, MCP tool lists); it is never the key itself."""

    id: str

    @classmethod
    def for_key(cls, key: str | bytes) -> Identity:
        raw = key.encode() if isinstance(key, str) else key
        return cls("key-" + hashlib.sha256(raw).hexdigest()[:16])


ANONYMOUS = Identity("anonymous")  # every caller when no gateway keys are set, and the local stdio client


def identity_of(scope: Mapping[str, Any]) -> Identity:
    """The caller of this request: the key middleware's verdict, or the anonymous identity without keys."""
    found = scope.get(SCOPE_KEY)
    return found if isinstance(found, Identity) else ANONYMOUS
