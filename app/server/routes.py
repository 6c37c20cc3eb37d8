"""The route table: every path the gateway answers, its methods, its handler and the front it belongs to.

This is the one declaration: the app (app/server/app.py) builds its dispatcher from it, the error-shape registry
(`SHAPES`) is derived from the fronts named here, and `/openapi.json` lists it. A `direct` entry is reached before
routing, without the framework's routing and exception layers (a pass-through chat request spends about a tenth of
its CPU there otherwise); its other methods still get the router's 405. A `mount` answers everything under its
path, any method. Handlers are named, not imported, so the table stays data; app/server/endpoints.py resolves them.
Each front's surface takes the error shape the front carries (`Front.shape`).

To add a front: a `Surface` (its prefix and its front's shape) and its entries here, its handler in endpoints.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.fronts.chat_completions import ChatCompletionsFront
from app.fronts.mcp.server import McpFront
from app.fronts.messages import MessagesFront
from app.fronts.responses import ResponsesFront
from app.fronts.shapes import OPENAI, ErrorShape
from app.server.shapes import ErrorShapes, Surface

# Each front's surface takes the error shape the front carries.
CHAT = Surface("chat_completions", "/v1/chat/completions", ChatCompletionsFront.shape)
RESPONSES = Surface("responses", "/v1/responses", ResponsesFront.shape)
MESSAGES = Surface("messages", "/v1/messages", MessagesFront.shape)
MCP = Surface("mcp", "/mcp", McpFront.shape)
MODELS = Surface("models", "/v1/models", OPENAI)
CONSOLE = Surface("console", "/console", OPENAI)
ADMIN = Surface("admin", "/admin", OPENAI)
GATEWAY = Surface("gateway", "", OPENAI)  # operations (health, readiness, metrics, docs); any other path

GET, POST = ("GET",), ("POST",)
ANY = ("GET", "POST", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Entry:
    path: str
    methods: tuple[str, ...]
    handler: str  # a name endpoints.py resolves
    surface: Surface
    summary: str
    direct: bool = False
    mount: bool = False
    docs: bool = False  # served only with `api_docs` on
    # Who may reach it: "key" (a gateway key, when there are keys), "open" (no key: the probes), "operator" (the
    # console and its admin API: loopback-only without admin keys, whose checks are their own), or
    # "key_or_operator" (an operator's view: an admin key opens it beside the gateway keys, as a scraper holds one).
    access: str = "key"


ROUTES: tuple[Entry, ...] = (
    Entry("/v1/chat/completions", POST, "chat", CHAT, "Chat Completions, tools deferred", direct=True),
    Entry("/v1/responses", POST, "responses.create", RESPONSES, "Responses API", direct=True),
    Entry("/v1/responses/compact", POST, "responses.compact", RESPONSES, "Compact a conversation"),
    Entry("/v1/responses/{response_id}", ("GET", "DELETE"), "responses.stored", RESPONSES, "A stored response"),
    Entry("/v1/responses/{response_id}/input_items", GET, "responses.input_items", RESPONSES, "Its input items"),
    Entry("/v1/messages", POST, "messages", MESSAGES, "Anthropic Messages", direct=True),
    Entry("/v1/messages/count_tokens", POST, "count_tokens", MESSAGES, "Anthropic token count"),
    Entry("/v1/models", GET, "models", MODELS, "The routed models"),
    Entry("/v1/models/{model_id:path}", GET, "model", MODELS, "One model"),
    Entry("/mcp", ANY, "mcp", MCP, "The MCP front (streamable HTTP)", mount=True),
    Entry("/healthz", GET, "healthz", GATEWAY, "Health: MCP servers and search", access="open"),
    Entry("/readyz", GET, "readyz", GATEWAY, "Readiness", access="open"),
    Entry("/metrics", GET, "metrics", GATEWAY, "Prometheus metrics", access="key_or_operator"),
    Entry("/console", GET, "admin.page", CONSOLE, "The console page", access="operator"),
    Entry("/console/console.css", GET, "admin.page", CONSOLE, "The console's style", access="operator"),
    Entry("/console/console.js", GET, "admin.page", CONSOLE, "The console's script", access="operator"),
    *(
        Entry(f"/admin/{name}", GET, f"admin.{name}", ADMIN, f"Admin API: {name}", access="operator")
        for name in ("servers", "tools", "manifest", "search", "requests", "metrics")
    ),
    Entry("/openapi.json", GET, "openapi", GATEWAY, "This API's OpenAPI document", docs=True),
    Entry("/docs", GET, "docs", GATEWAY, "This API's documentation", docs=True),
)

SHAPES = ErrorShapes([entry.surface for entry in ROUTES], OPENAI)
OPEN_PATHS = frozenset(entry.path for entry in ROUTES if entry.access == "open")
OPERATOR_VIEWS = frozenset(entry.path for entry in ROUTES if entry.access == "key_or_operator")
# The prefixes of the fronts whose entries are the operator's: every path under them, listed or not, is guarded alike.
OPERATOR_PREFIXES = tuple(sorted({entry.surface.prefix for entry in ROUTES if entry.access == "operator"}))


def shape_for(path: str) -> ErrorShape:
    """The error shape of the front `path` is addressed to."""
    return SHAPES.for_path(path)


def routes(api_docs: bool) -> list[Entry]:
    """The table as served: the docs entries only with `api_docs` on."""
    return [entry for entry in ROUTES if api_docs or not entry.docs]


def openapi(title: str) -> dict[str, Any]:
    """The OpenAPI document of the table: every path and method, tagged with its front."""
    paths: dict[str, dict[str, Any]] = {}
    for entry in routes(api_docs=False):
        operations = paths.setdefault(re.sub(r"\{(\w+):\w+\}", r"{\1}", entry.path), {})
        for method in entry.methods:
            name = re.sub(r"\W+", "_", f"{entry.handler}_{entry.path}_{method}").strip("_").lower()
            operations[method.lower()] = {"summary": entry.summary, "operationId": name, "tags": [entry.surface.name]}
    return {"openapi": "3.1.0", "info": {"title": title, "version": "0.1.0"}, "paths": paths}
