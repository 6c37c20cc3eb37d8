"""Who is calling: the caller's `Identity`, which keys every piece of per-caller state (sessions, stored
responses, MCP tool lists, quotas) so one caller's state is never another's, and carries what it may reach.

A domain type, low in the tree so the engine and the fronts can use it; how a gateway key becomes an identity
(constant-time key checks) is `Identities.identify`, which the server edge calls and records in the ASGI scope.
A plain-string key's identity is `key-` and 16 hex digits of the key's SHA-256; a named identity's is its name
(the config refuses names that could spell either that or `anonymous`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from app.config import AuthConfig
from app.config.identities import IdentityLimits

SCOPE_KEY = "toolsift.identity"


@dataclass(frozen=True)
class Identity:
    """Who is calling. `id` keys per-caller state and labels metrics; it is never the key itself. The rest is what
    the config allows it (nothing set: everything, as a plain key): compared by `id` alone."""

    id: str
    tool_set: str | None = field(default=None, compare=False)
    models: frozenset[str] | None = field(default=None, compare=False)
    limits: IdentityLimits = field(default_factory=IdentityLimits, compare=False)
    secrets: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    named: bool = field(default=False, compare=False)

    @classmethod
    def for_key(cls, key: str | bytes) -> Identity:
        raw = key.encode() if isinstance(key, str) else key
        return cls("key-" + hashlib.sha256(raw).hexdigest()[:16])

    def allows_model(self, model: str) -> bool:
        return self.models is None or model in self.models


ANONYMOUS = Identity("anonymous")  # every caller when no gateway keys are set, and the local stdio client


class Identities:
    """The configured gateway keys and the identity each one is."""

    def __init__(self, auth: AuthConfig) -> None:
        self._keys: list[tuple[bytes, Identity]] = []
        for entry in auth.api_keys:
            if isinstance(entry, str):
                if entry:
                    self._keys.append((entry.encode(), Identity.for_key(entry)))
                continue
            identity = Identity(
                entry.name,
                entry.tool_set,
                frozenset(entry.models) if entry.models is not None else None,
                entry.limits,
                MappingProxyType(dict(entry.secrets)),
                named=True,
            )
            self._keys.append((entry.key.encode(), identity))
        self._by_id = {identity.id: identity for _, identity in self._keys}

    def __bool__(self) -> bool:
        return bool(self._keys)

    def identify(self, token: bytes) -> Identity | None:
        """The identity of a gateway key, or None when `token` is none of the keys; every key is compared, each in
        constant time, so timing tells nothing about which key or how much of it matched."""
        found = None
        for key, identity in self._keys:
            if hmac.compare_digest(token, key) and found is None:
                found = identity
        return found

    def get(self, identity_id: str) -> Identity:
        """The identity an id names (an MCP access token carries the id only, and only ids the key check issued
        reach here); `anonymous` is the caller without keys."""
        return self._by_id.get(identity_id) or (ANONYMOUS if identity_id == ANONYMOUS.id else Identity(identity_id))

    def stored_bytes(self) -> dict[str, int]:
        """Each identity's own bound in the stores, where its config sets one."""
        return {
            identity.id: identity.limits.stored_bytes
            for _, identity in self._keys
            if identity.limits.stored_bytes is not None
        }

    def named(self) -> list[Identity]:
        return [identity for _, identity in self._keys if identity.named]


def identity_of(scope: Mapping[str, Any]) -> Identity:
    """The caller of this request: the key middleware's verdict, or the anonymous identity without keys."""
    found = scope.get(SCOPE_KEY)
    return found if isinstance(found, Identity) else ANONYMOUS
