"""The edge every request passes first: request ids, browser origins, DNS rebinding, and JSON-only bodies.

A browser can send a "simple" cross-site POST (`text/plain`, a form) without any CORS preflight, and a page on a
rebound domain reaches a loopback gateway as its own origin. So, before any work: a request that carries an
`Origin` must come from the gateway's own origin or from `cors_origins`; on a loopback connection with no gateway
keys, the `Host` must be a loopback name; and a request body must be JSON. SDKs and curl send no `Origin` and a
loopback or real host name, so they pass unchanged. Refusals answer in the called front's shape (app/server/routes.py:
a JSON-RPC error on `/mcp`, Anthropic's error on `/v1/messages`, OpenAI's error object elsewhere).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
import secrets
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.common.errors import GatewayError
from app.common.logs import REQUEST_ID
from app.server.surfaces import OPERATOR_PREFIXES, shape_for

REQUEST_ID_HEADER = b"x-request-id"
_SCOPE_KEY = "toolsift.request_id"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# The console and its admin API (the route table's operator paths) show every tool and recent queries: `"*"` in
# cors_origins never opens them to every page (a listed origin still does).


def request_id_of(scope: Scope) -> str:
    """The request's id: the client's `x-request-id` if it is a plain token, else a new one; one per request."""
    found: str | None = scope.get(_SCOPE_KEY)
    if found is None:
        supplied = next((value for name, value in scope["headers"] if name == REQUEST_ID_HEADER), b"")
        text = supplied.decode("latin-1")
        found = text if _REQUEST_ID.fullmatch(text) else new_request_id()
        scope[_SCOPE_KEY] = found
    return found


def new_request_id() -> str:
    return f"req_{secrets.token_hex(8)}"


def refusal_body(path: str, message: str, code: str, status: int = 400) -> bytes:
    """A refusal in the shape of the front `path` is addressed to (app/server/routes.py)."""
    return json.dumps(shape_for(path).refusal(status, message, code)).encode()


async def refuse(scope: Scope, send: Send, status: int, message: str, code: str) -> None:
    """Answer an error without reading the request body."""
    await answer_json(send, status, refusal_body(scope["path"], message, code, status))


async def refuse_error(scope: Scope, send: Send, error: GatewayError) -> None:
    """Answer an engine's refusal (403, 429 with its `Retry-After`) in the shape of the front called."""
    body = json.dumps(shape_for(scope["path"]).failure(error)).encode()
    await answer_json(send, error.status, body, error.headers())


async def answer_json(send: Send, status: int, body: bytes, extra: dict[str, str] | None = None) -> None:
    length = str(len(body)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", length), (b"connection", b"close")]
    headers += [(name.encode(), value.encode()) for name, value in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class EdgeGuard:
    """Outermost middleware: tags every response with `x-request-id`, refuses foreign origins and rebound hosts."""

    def __init__(self, app: ASGIApp, cors_origins: list[str], keyed: bool) -> None:
        self.app = app
        self.any_origin = "*" in cors_origins
        self.origins = {origin.rstrip("/").lower() for origin in cors_origins}
        self.keyed = keyed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_of(scope)
        REQUEST_ID.set(request_id)  # log lines of this request, on any route, carry it
        rid = request_id.encode()

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                if not any(name.lower() == REQUEST_ID_HEADER for name, _ in headers):
                    message = {**message, "headers": [*headers, (REQUEST_ID_HEADER, rid)]}
            await send(message)

        hosts = _values(scope, b"host")
        origins = _values(scope, b"origin")
        operator = any(_under(scope["path"], prefix) for prefix in OPERATOR_PREFIXES)
        foreign = [origin for origin in origins if not self._origin_allowed(origin, hosts, operator)]
        if foreign:
            text = f"Origin {foreign[0]!r} is not allowed: it is neither this gateway's own origin nor in cors_origins."
            await refuse(scope, tagged, 403, text, "origin_not_allowed")
        elif not self.keyed and loopback(scope) and not all(_loopback_name(host) for host in hosts):
            text = (
                f"Host {', '.join(hosts)!r} is not a loopback name (localhost, 127.0.0.1, [::1]): refused on a "
                "loopback gateway without keys, against DNS rebinding. To serve other names, set auth.api_keys."
            )
            await refuse(scope, tagged, 403, text, "host_not_allowed")
        else:
            await self.app(scope, receive, tagged)

    def _origin_allowed(self, origin: str, hosts: list[str], operator: bool) -> bool:
        """Own origin or a listed one; `"*"` stands for any origin except on the operator's paths."""
        normalized = origin.rstrip("/").lower()
        if (self.any_origin and not operator) or normalized in self.origins:
            return True
        try:
            sent = urlsplit(normalized)
            default = _DEFAULT_PORTS.get(sent.scheme)
            if default is None or sent.hostname is None or not hosts:
                return False
            sent_address = (sent.hostname, sent.port or default)
            served = [urlsplit(f"//{host.lower()}") for host in hosts]
            return all(sent_address == (host.hostname, host.port or default) for host in served)
        except ValueError:  # a port that is not a number, an unclosed IPv6 bracket
            return False


class JsonBodies:
    """A request with a body must declare JSON (`application/json` or `application/*+json`): anything else is what
    a browser can send cross-site without a preflight, and no client of this gateway needs it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in _BODY_METHODS:
            declared = next((value for name, value in scope["headers"] if name == b"content-type"), b"")
            media = declared.decode("latin-1").partition(";")[0].strip().lower()
            if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
                shown = repr(media) if media else "none"
                text = f"Unsupported Content-Type ({shown}): send the request body as JSON with application/json."
                await refuse(scope, send, 415, text, "unsupported_media_type")
                return
        await self.app(scope, receive, send)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def _values(scope: Scope, name: bytes) -> list[str]:
    """Every value of a header: a second `Origin` or `Host` must not slip past the check of the first."""
    return [value.decode("latin-1") for key, value in scope["headers"] if key == name]


def loopback(scope: Scope) -> bool:
    """The connection arrived on a loopback address (where a rebound domain points a browser)."""
    server = scope.get("server")
    return server is not None and _is_loopback_ip(str(server[0]))


@functools.lru_cache(maxsize=256)
def _loopback_name(host: str) -> bool:
    try:
        name = urlsplit(f"//{host}").hostname or ""
    except ValueError:  # an unclosed IPv6 bracket
        return False
    return name == "localhost" or _is_loopback_ip(name)


@functools.lru_cache(maxsize=256)
def _is_loopback_ip(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False
