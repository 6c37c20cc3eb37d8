"""What a front declares to be served: its name, path prefix and error shape, and its routes, each a path, its
methods and what serves it. No web framework here: the server edge turns each declaration into a handler
(app/server/mounting.py), so a front is written against the gateway's types alone and the edge stays the one
place that speaks HTTP.

A route is served one of four ways, which the edge runs the same for every front:
- `Chat`: the chat pipeline (app/server/serve.py): body read under limits, parsed by the front, the engine's chat,
  answered or streamed by the front;
- `Count`: a body counted by the front under the same limits and admission (Anthropic's `count_tokens`);
- `View`: a small JSON answer the front computes from the path's parameters and the query (a stored response);
- `Sessions`: MCP over streamable HTTP, one MCP server per tool scope, built by the front's factory.

A new front is a folder under app/fronts/ with its front, its routes module (a `FRONT`), and its codec unless a
provider shares one in app/codecs/; one line in app/server/fronts.py mounts it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from app.common.errors import GatewayError
from app.core.catalog import ToolScope
from app.core.model import JsonObject
from app.engine.api import Engine
from app.fronts.base import Call, Front
from app.fronts.shapes import ErrorShape

GET, POST = ("GET",), ("POST",)
ANY = ("GET", "POST", "DELETE", "OPTIONS")


class Counting(Protocol):
    """A front that counts a request's tokens without running it."""

    def count(self, body: bytes, call: Call) -> JsonObject:
        """Pure CPU, run in a worker thread: the count's body; GatewayError (400) for an invalid request."""
        ...

    def error(self, error: GatewayError) -> JsonObject: ...


@dataclass(frozen=True)
class ViewArgs:
    """A view's request: its method, the path's parameters and the query (first value of each name)."""

    method: str
    path: Mapping[str, str]
    query: Mapping[str, str]


@dataclass(frozen=True)
class Chat:
    front: Front


@dataclass(frozen=True)
class Count:
    front: Counting


@dataclass(frozen=True)
class View:
    answer: Callable[[Call, ViewArgs], Awaitable[JsonObject]]
    error: Callable[[GatewayError], JsonObject]


@dataclass(frozen=True)
class Sessions:
    """MCP's streamable HTTP: `serving(scope, verifier)` is the ASGI app (a Starlette app whose router's lifespan
    the edge runs) of one MCP server for one tool scope the engine serves, at `path`; `verifier` checks a client's
    gateway key (None without keys)."""

    serving: Callable[[ToolScope, Any, str], Any]


Serves = Chat | Count | View | Sessions


@dataclass(frozen=True)
class Route:
    path: str
    methods: tuple[str, ...]
    summary: str
    serves: Serves
    direct: bool = False  # reached before routing: a hot path (see app/server/routes.py)


@dataclass(frozen=True)
class FrontSpec:
    """A front as the edge mounts it: `routes(engine)` builds its parts once per app."""

    name: str
    prefix: str
    shape: ErrorShape
    routes: Callable[[Engine], tuple[Route, ...]]
