"""The console page (`/console`) and the admin API behind it (`/admin/...`, JSON).

The page's shell and assets hold no data, so they need no key (a browser cannot send one on navigation); its
script fetches the admin API from the same origin with the admin key as a Bearer header. The admin API shows
every tool and recent queries: with gateway keys on it takes admin keys only (an ordinary key is refused with
403, none with 401); without keys it is served to loopback connections only. Errors are OpenAI's error object.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.common.errors import RequestRefused, error_body
from app.config import SEARCH_RESULTS_HARD_CAP
from app.engine.api import Engine
from app.fronts.inspection import manifest_report, tool_rows
from app.server.auth import identify
from app.server.edge import loopback

ASSETS = Path(__file__).parent / "console"
PAGES = {
    "/console": ("index.html", "text/html; charset=utf-8"),
    "/console/console.css": ("console.css", "text/css; charset=utf-8"),
    "/console/console.js": ("console.js", "text/javascript; charset=utf-8"),
}
SHELL_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
_ERROR_TYPES = {401: "invalid_request_error", 403: "permission_error", 404: "not_found_error"}


def _error(status: int, message: str, code: str, param: str | None = None) -> JSONResponse:
    kind = _ERROR_TYPES.get(status, "invalid_request_error")
    headers = {"www-authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(message, kind, param, code), status, headers=headers)


class AdminApi:
    VIEWS: ClassVar[tuple[AdminView, ...]]  # the JSON views, each at /admin/<its name>

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        config = engine.config
        self.api_keys = [key.encode() for key in config.auth.gateway_keys()]
        self.admin_keys = [key.encode() for key in config.auth.admin_keys if key]

    def _unavailable(self, request: Request) -> JSONResponse | None:
        if not self.engine.config.console.enabled:
            return _error(404, "The console is turned off (console.enabled).", "console_disabled")
        if not self.api_keys and not self.admin_keys and not loopback(request.scope):
            message = "Without gateway keys the console is served on loopback only: set auth.admin_keys."
            return _error(404, message, "console_not_served")
        return None

    def _refused(self, request: Request) -> JSONResponse | None:
        unavailable = self._unavailable(request)
        if unavailable is not None or (not self.api_keys and not self.admin_keys):
            return unavailable
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token_bytes = token.strip().encode() if scheme.lower() == "bearer" else b""
        if token_bytes and identify(token_bytes, self.admin_keys) is not None:
            return None
        if token_bytes and identify(token_bytes, self.api_keys) is not None:
            message = "This gateway key is not an admin key: the admin API shows every tool and recent queries."
            return _error(403, message + " Use one of auth.admin_keys.", "admin_key_required")
        message = "Missing or invalid admin key: send 'Authorization: Bearer <key>' with one of auth.admin_keys."
        return _error(401, message, "invalid_api_key")

    async def page(self, request: Request) -> Response:
        unavailable = self._unavailable(request)
        if unavailable is not None:
            return unavailable
        name, kind = PAGES[request.url.path]
        return Response((ASSETS / name).read_bytes(), media_type=kind, headers=SHELL_HEADERS)

    async def answer(self, view: AdminView, request: Request) -> Response:
        """A view's JSON, behind the admin keys' check; a bad parameter is a 400 naming it."""
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = await view(self, request)
        except RequestRefused as exc:
            return _error(400, exc.message, exc.code or "invalid_request", exc.param)
        return JSONResponse(body, headers={"cache-control": "no-store"})

    async def servers(self, _: Request) -> dict[str, Any]:
        servers = [{"name": name, **health} for name, health in self.engine.health().items()]
        return {"servers": servers, "search": self.engine.search_status()}

    async def tools(self, request: Request) -> dict[str, Any]:
        tool_set = _text(request, "tool_set")
        config = self.engine.config
        tools = tool_rows(self.engine.catalog, config, tool_set, _text(request, "server"))
        return {"tool_set": tool_set, "tool_sets": sorted(config.tool_sets), "tools": tools}

    async def manifest(self, request: Request) -> dict[str, Any]:
        tool_set = _text(request, "tool_set")
        return {"tool_set": tool_set, **manifest_report(self.engine.discovery(tool_set))}

    async def search(self, request: Request) -> dict[str, Any]:
        """One `query`, or several (`query` repeated) searched as one `search_tools` call of several queries."""
        queries = [value.strip() for value in request.query_params.getlist("query") if value.strip()]
        if not queries:
            raise RequestRefused("'query' is required: the words to search for.", param="query", code="missing_query")
        config = self.engine.config
        limit = _number(request, "k", config.tool_discovery.max_search_results, SEARCH_RESULTS_HARD_CAP)
        tool_set = _text(request, "tool_set")
        identity = _text(request, "identity")
        report = await self.engine.explain_search(tool_set, queries, _text(request, "server"), limit, identity)
        return {"query": queries[0], **report}

    async def learning(self, request: Request) -> dict[str, Any]:
        """The pairs search learned from successful calls: GET lists them, DELETE clears them; both all, or one
        `tool`'s, or one `identity`'s, or both."""
        tool, identity = _text(request, "tool"), _text(request, "identity")
        if request.method == "DELETE":
            return {"cleared": await self.engine.forget(tool, identity), "tool": tool, "identity": identity}
        pairs = await self.engine.learned_pairs(tool, identity)
        return {"pairs": pairs[: _number(request, "limit", 500, 100_000)], "total": len(pairs)}

    async def requests(self, request: Request) -> dict[str, Any]:
        return {"requests": self.engine.recent_requests(_number(request, "limit", 50, 10_000))}

    async def metrics(self, _: Request) -> dict[str, Any]:
        totals: dict[str, float] = {}
        for family in self.engine.metrics_registry.collect():
            for sample in family.samples:
                if sample.name.endswith(("_total", "_count")):
                    totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
        recent = self.engine.recent_requests()
        names = ("requests", "rounds", "search_calls", "tools_discovered", "tools_prefetched", "tool_tokens_saved",
                 "cache_hits_lost", "upstream_cached_tokens", "upstream_cache_write_tokens")  # fmt: skip
        headline = {name: int(totals.get(f"toolsift_{name}_total", 0)) for name in names}
        headline["mcp_calls"] = int(totals.get("toolsift_mcp_call_seconds_count", 0))
        headline["mcp_errors"] = int(totals.get("toolsift_mcp_errors_total", 0))
        headline["recent_requests"] = len(recent)
        headline["recent_likely_misses"] = sum(item["likely_miss"] for item in recent)
        return headline


def _text(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


def _number(request: Request, name: str, default: int, most: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or not raw.strip():
        return default
    if not raw.strip().isdigit() or not 1 <= int(raw) <= most:
        raise RequestRefused(f"'{name}' must be a whole number from 1 to {most}.", param=name, code="invalid_number")
    return int(raw)


AdminView = Callable[[AdminApi, Request], Awaitable[dict[str, Any]]]
AdminApi.VIEWS = (AdminApi.servers, AdminApi.tools, AdminApi.manifest, AdminApi.search, AdminApi.requests,
                  AdminApi.metrics, AdminApi.learning)  # fmt: skip
WRITES = {"learning": ("GET", "DELETE")}  # the views that change something, and their methods
