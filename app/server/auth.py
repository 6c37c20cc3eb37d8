"""Gateway keys: with `auth.api_keys` set, every endpoint needs `Authorization: Bearer <key>` (or `x-api-key: <key>`,
as Anthropic clients send it), but the probes `/healthz` and `/readyz` (load balancers ask them without one) and
the console's page, which holds no data (its admin API checks admin keys itself).

A plain ASGI middleware (no request body buffering, nothing on the streaming path). Keys are compared in
constant time, each one, so timing tells nothing about which key or how much of it matched. The key that
matched becomes the request's `Identity` (app/common/identity.py), put in the ASGI scope: sessions and the MCP front
read it there, so one caller's state is never another's.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from app.common.identity import SCOPE_KEY, Identities, Identity
from app.config import AuthConfig
from app.server.surfaces import OPERATOR_PREFIXES, shape_for


def _own_guard(path: str) -> bool:
    """The console's shell holds no data and the admin API checks admin keys itself (app/server/admin.py): the
    operator's paths (the route table's `access`) pass the gateway keys' check."""
    return any(path == prefix or path.startswith(prefix + "/") for prefix in OPERATOR_PREFIXES)


def identify(token: bytes, keys: list[bytes]) -> Identity | None:
    """The identity of a key, or None when `token` is none of `keys` (each compared in constant time): the admin
    API's check of its own keys; gateway keys are `Identities.identify`."""
    matches = [hmac.compare_digest(token, key) for key in keys]
    return Identity.for_key(token) if any(matches) else None


def sent_keys(scope: Scope) -> list[bytes]:
    """The keys a request presents: its Bearer token and its `x-api-key`, those that are not empty."""
    headers = dict(scope.get("headers") or [])
    scheme, _, bearer = headers.get(b"authorization", b"").partition(b" ")
    sent = [bearer.strip() if scheme.lower() == b"bearer" else b"", headers.get(b"x-api-key", b"").strip()]
    return [token for token in sent if token]


class Operators:
    """The admin keys (`auth.admin_keys`): whoever presents one sees what concerns every identity, where a
    gateway key sees its own (/metrics) or none (/healthz)."""

    def __init__(self, auth: AuthConfig) -> None:
        self.keys = [key.encode() for key in auth.admin_keys if key]

    def present(self, scope: Scope) -> bool:
        return any(identify(token, self.keys) is not None for token in sent_keys(scope)) if self.keys else False


class ApiKeyMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        identities: Identities,
        operators: Operators | None = None,
        open_paths: frozenset[str] = frozenset(),
        operator_views: frozenset[str] = frozenset(),
    ) -> None:
        """`open_paths` need no key (the probes); `operator_views` take an admin key beside the gateway keys (the
        route table's `access`)."""
        self.app = app
        self.open_paths = open_paths
        self.operator_views = operator_views
        self.identities = identities
        self.operators = operators

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self.open_paths or _own_guard(path) or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        if path in self.operator_views and self.operators is not None and self.operators.present(scope):
            await self.app(scope, receive, send)
            return
        message = "Missing or invalid API key: send 'Authorization: Bearer <key>' (or 'x-api-key') with a gateway key."
        body = json.dumps(shape_for(path).unauthenticated(message)).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _allowed(self, scope: Scope) -> bool:
        """A gateway key was sent; its identity is recorded in the scope for what runs after."""
        for token in sent_keys(scope):
            identity = self.identities.identify(token)
            if identity is not None:
                scope[SCOPE_KEY] = identity
                return True
        return False
