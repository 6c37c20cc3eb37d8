"""The route table: every path the gateway answers, its methods, its handler, its access and the part of the URL
space it belongs to (app/server/surfaces.py).

This is the one declaration: the app (app/server/app.py) builds its dispatcher from it, the key middleware takes
its open and operator paths from it, and `/openapi.json` lists it. Each entry holds its handler, called with the
app's `Endpoints` and the request (or, for a `mount`, the ASGI app it mounts). A `direct` entry is reached before
routing, without the framework's routing and exception layers (a pass-through chat request spends about a tenth of
its CPU there otherwise); its other methods still get the router's 405. A `mount` answers everything under its
path, any method.

To add a front: its surface (prefix and its front's shape) in surfaces.py, its entries here with their handlers,
and the front itself on `Endpoints`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from app.server.admin import AdminApi, AdminView
from app.server.endpoints import Endpoints
from app.server.responses_routes import ResponsesApi
from app.server.shapes import Surface
from app.server.surfaces import ADMIN, CHAT, CONSOLE, GATEWAY, MCP, MESSAGES, MODELS, RESPONSES

Handler = Callable[[Endpoints, Request], Awaitable[Response]]
Mount = Callable[[Endpoints], ASGIApp]
# Who may reach it: "key" (a gateway key, when there are keys), "open" (no key: the probes), "operator" (the console
# and its admin API: loopback-only without admin keys, whose checks are their own), or "key_or_operator" (an
# operator's view: an admin key opens it beside the gateway keys, as a scraper holds one).
Access = Literal["key", "open", "operator", "key_or_operator"]

GET, POST = ("GET",), ("POST",)
ANY = ("GET", "POST", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Entry:
    path: str
    methods: tuple[str, ...]
    handler: Handler | Mount
    surface: Surface
    summary: str
    direct: bool = False
    mount: bool = False  # `handler` is a `Mount`
    docs: bool = False  # served only with `api_docs` on
    access: Access = "key"


def _responses(method: Callable[[ResponsesApi, Request], Awaitable[Response]]) -> Handler:
    async def responses(endpoints: Endpoints, request: Request) -> Response:
        return await method(endpoints.responses, request)

    responses.__name__ = f"responses_{method.__name__}"
    return responses


def _admin(view: AdminView) -> Handler:
    """An admin API view, behind the admin API's own key check."""

    async def admin(endpoints: Endpoints, request: Request) -> Response:
        return await endpoints.admin.answer(view, request)

    admin.__name__ = f"admin_{view.__name__}"
    return admin


async def _console(endpoints: Endpoints, request: Request) -> Response:
    return await endpoints.admin.page(request)


def _mcp(endpoints: Endpoints) -> ASGIApp:
    return endpoints.mcp


ROUTES: tuple[Entry, ...] = (
    Entry("/v1/chat/completions", POST, Endpoints.chat, CHAT, "Chat Completions, tools deferred", direct=True),
    Entry("/v1/responses", POST, _responses(ResponsesApi.create), RESPONSES, "Responses API", direct=True),
    Entry("/v1/responses/compact", POST, _responses(ResponsesApi.compact), RESPONSES, "Compact a conversation"),
    Entry("/v1/responses/{response_id}", ("GET", "DELETE"), _responses(ResponsesApi.stored), RESPONSES,
          "A stored response"),
    Entry("/v1/responses/{response_id}/input_items", GET, _responses(ResponsesApi.input_items), RESPONSES,
          "Its input items"),
    Entry("/v1/messages", POST, Endpoints.messages, MESSAGES, "Anthropic Messages", direct=True),
    Entry("/v1/messages/count_tokens", POST, Endpoints.count_tokens, MESSAGES, "Anthropic token count"),
    Entry("/v1/models", GET, Endpoints.models, MODELS, "The routed models"),
    Entry("/v1/models/{model_id:path}", GET, Endpoints.model, MODELS, "One model"),
    Entry("/mcp", ANY, _mcp, MCP, "The MCP front (streamable HTTP)", mount=True),
    Entry("/healthz", GET, Endpoints.healthz, GATEWAY, "Health: MCP servers and search", access="open"),
    Entry("/readyz", GET, Endpoints.readyz, GATEWAY, "Readiness", access="open"),
    Entry("/metrics", GET, Endpoints.metrics, GATEWAY, "Prometheus metrics", access="key_or_operator"),
    Entry("/console", GET, _console, CONSOLE, "The console page", access="operator"),
    Entry("/console/console.css", GET, _console, CONSOLE, "The console's style", access="operator"),
    Entry("/console/console.js", GET, _console, CONSOLE, "The console's script", access="operator"),
    *(
        Entry(f"/admin/{view.__name__}", GET, _admin(view), ADMIN, f"Admin API: {view.__name__}", access="operator")
        for view in AdminApi.VIEWS
    ),
    Entry("/openapi.json", GET, Endpoints.openapi, GATEWAY, "This API's OpenAPI document", docs=True),
    Entry("/docs", GET, Endpoints.docs, GATEWAY, "This API's documentation", docs=True),
)  # fmt: skip

OPEN_PATHS = frozenset(entry.path for entry in ROUTES if entry.access == "open")
OPERATOR_VIEWS = frozenset(entry.path for entry in ROUTES if entry.access == "key_or_operator")


def routes(api_docs: bool) -> list[Entry]:
    """The table as served: the docs entries only with `api_docs` on."""
    return [entry for entry in ROUTES if api_docs or not entry.docs]


def openapi(title: str) -> dict[str, Any]:
    """The OpenAPI document of the table: every path and method, tagged with its front."""
    paths: dict[str, dict[str, Any]] = {}
    for entry in routes(api_docs=False):
        operations = paths.setdefault(re.sub(r"\{(\w+):\w+\}", r"{\1}", entry.path), {})
        for method in entry.methods:
            name = re.sub(r"\W+", "_", f"{entry.handler.__name__}_{entry.path}_{method}").strip("_").lower()
            operations[method.lower()] = {"summary": entry.summary, "operationId": name, "tags": [entry.surface.name]}
    return {"openapi": "3.1.0", "info": {"title": title, "version": "0.1.0"}, "paths": paths}
