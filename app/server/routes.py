"""The route table: every path the gateway answers, its methods, what serves it, its access and the part of the
URL space it belongs to (app/server/surfaces.py).

The gateway's own paths (models, probes, metrics, console, admin API, docs) are entries here, each holding its
handler, called with the app's `Endpoints` and the request. The fronts' paths are their own declarations
(app/fronts/*/routes.py, mounted by app/server/fronts.py and served by app/server/mounting.py). The app
(app/server/app.py) builds its dispatcher from both, the key middleware takes its open and operator paths from
the entries, and `/openapi.json` lists both. A front's `direct` route is reached before routing, without the
framework's routing and exception layers (a pass-through chat request spends about a tenth of its CPU there
otherwise); its other methods still get the router's 405. An MCP sessions route answers everything under its
path, any method.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response

from app.fronts.routing import GET
from app.server.admin import WRITES, AdminApi, AdminView
from app.server.endpoints import Endpoints
from app.server.mounting import Mounted
from app.server.shapes import Surface
from app.server.surfaces import ADMIN, CONSOLE, GATEWAY, MODELS

Handler = Callable[[Endpoints, Request], Awaitable[Response]]
# Who may reach it: "key" (a gateway key, when there are keys), "open" (no key: the probes), "operator" (the console
# and its admin API: loopback-only without admin keys, whose checks are their own), or "key_or_operator" (an
# operator's view: an admin key opens it beside the gateway keys, as a scraper holds one). A front's routes are
# "key".
Access = Literal["key", "open", "operator", "key_or_operator"]


@dataclass(frozen=True)
class Entry:
    path: str
    methods: tuple[str, ...]
    handler: Handler
    surface: Surface
    summary: str
    docs: bool = False  # served only with `api_docs` on
    access: Access = "key"


def _admin(view: AdminView) -> Handler:
    """An admin API view, behind the admin API's own key check."""

    async def admin(endpoints: Endpoints, request: Request) -> Response:
        return await endpoints.admin.answer(view, request)

    admin.__name__ = f"admin_{view.__name__}"
    return admin


async def _console(endpoints: Endpoints, request: Request) -> Response:
    return await endpoints.admin.page(request)


ROUTES: tuple[Entry, ...] = (
    Entry("/v1/models", GET, Endpoints.models, MODELS, "The routed models"),
    Entry("/v1/models/{model_id:path}", GET, Endpoints.model, MODELS, "One model"),
    Entry("/healthz", GET, Endpoints.healthz, GATEWAY, "Health: MCP servers and search", access="open"),
    Entry("/readyz", GET, Endpoints.readyz, GATEWAY, "Readiness", access="open"),
    Entry("/metrics", GET, Endpoints.metrics, GATEWAY, "Prometheus metrics", access="key_or_operator"),
    Entry("/console", GET, _console, CONSOLE, "The console page", access="operator"),
    Entry("/console/console.css", GET, _console, CONSOLE, "The console's style", access="operator"),
    Entry("/console/console.js", GET, _console, CONSOLE, "The console's script", access="operator"),
    *(
        Entry(f"/admin/{view.__name__}", WRITES.get(view.__name__, GET), _admin(view), ADMIN,
              f"Admin API: {view.__name__}", access="operator")
        for view in AdminApi.VIEWS
    ),
    Entry("/openapi.json", GET, Endpoints.openapi, GATEWAY, "This API's OpenAPI document", docs=True),
    Entry("/docs", GET, Endpoints.docs, GATEWAY, "This API's documentation", docs=True),
)  # fmt: skip

OPEN_PATHS = frozenset(entry.path for entry in ROUTES if entry.access == "open")
OPERATOR_VIEWS = frozenset(entry.path for entry in ROUTES if entry.access == "key_or_operator")


def routes(api_docs: bool) -> list[Entry]:
    """The gateway's own entries as served: the docs entries only with `api_docs` on."""
    return [entry for entry in ROUTES if api_docs or not entry.docs]


def openapi(title: str, fronts: list[Mounted]) -> dict[str, Any]:
    """The OpenAPI document of the fronts' routes and the gateway's own: every path and method, tagged with its
    front (or the part of the gateway it belongs to)."""
    described = [(m.route.path, m.route.methods, m.route.summary, m.front.name) for m in fronts]
    described += [(e.path, e.methods, e.summary, e.surface.name) for e in routes(api_docs=False)]
    paths: dict[str, dict[str, Any]] = {}
    for path, methods, summary, tag in described:
        operations = paths.setdefault(re.sub(r"\{(\w+):\w+\}", r"{\1}", path), {})
        for method in methods:
            name = re.sub(r"\W+", "_", f"{tag}_{path}_{method}").strip("_").lower()
            operations[method.lower()] = {"summary": summary, "operationId": name, "tags": [tag]}
    return {"openapi": "3.1.0", "info": {"title": title, "version": "0.1.0"}, "paths": paths}
