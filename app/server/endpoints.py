"""The handlers of the gateway's own paths that the route table (app/server/routes.py) holds: the models list,
health, readiness and metrics, and the docs; and the console's and admin API's (`admin`). The fronts' are their
own (app/server/mounting.py).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.common.errors import GatewayError, error_body
from app.common.identity import identity_of
from app.engine.api import Engine
from app.server.admin import AdminApi
from app.server.auth import Operators
from app.server.observability import METRICS_CONTENT_TYPE, exposition


class Endpoints:
    def __init__(self, engine: Engine, openapi: dict[str, Any], title: str) -> None:
        """`openapi`: the route table's document, served at /openapi.json as `title`."""
        self.engine = engine
        self.openapi_document = openapi
        self.title = title
        self.config = engine.config
        self.admin = AdminApi(engine)
        self.operators = Operators(self.config.auth)
        self.searching = False  # search by meaning was ready (or off) once: readiness no longer waits for it

    async def healthz(self, request: Request) -> Response:
        """Probes ask without a key, so this names no identity: a server with a connection per identity shows how
        many are open; an admin key (as in the admin API's `/admin/servers`) sees whose."""
        servers = self.engine.health()
        if not self.operators.present(request.scope):
            servers = {name: _unnamed(server) for name, server in servers.items()}
        up = all(server["state"] in ("up", "disabled") for server in servers.values())
        status = "ok" if up else "degraded"
        return JSONResponse({"status": status, "servers": servers, "search": self.engine.search_status()})

    async def readyz(self, _: Request) -> Response:
        """Ready when the gateway itself can serve: started, its search by meaning ready when it is on (the first
        searches would otherwise run on keywords alone), with a provider that can call upstream (one whose key
        variable is unset cannot). A down MCP server is reported by /healthz and answered per call; it does not
        make the gateway unready."""
        problems = []
        if not self.engine.started:
            problems.append("starting")
        elif not self.searching:  # the first time only: a later catalog change never takes a replica out
            search = self.engine.search_status()
            if search["mode"] == "embedding":
                problems.append(f"search by meaning is not ready yet: {search.get('reason') or 'embedding tools'}")
            else:
                self.searching = True
        unable = self.config.provider_problems()
        if unable is not None:
            problems.append(unable)
        body = {"status": "ready" if not problems else "not ready", "problems": problems}
        return JSONResponse(body, 200 if not problems else 503)

    async def metrics(self, request: Request) -> Response:
        """Every series for an admin key (a scraper's) or without gateway keys; a gateway key sees the gateway's
        own series and its identity's, never another identity's."""
        everything = not self.engine.identities or self.operators.present(request.scope)
        only = None if everything else identity_of(request.scope).id
        return Response(exposition(self.engine.metrics_registry, only), media_type=METRICS_CONTENT_TYPE)

    async def models(self, request: Request) -> Response:
        """The aliases the caller may ask for (an identity with `models` sees those of its list)."""
        refused = await self._admitted(request)
        if refused is not None:
            return refused
        identity = identity_of(request.scope)
        aliases = self.config.models.items()
        data = [_model(alias, model.provider) for alias, model in aliases if identity.allows_model(alias)]
        return JSONResponse({"object": "list", "data": data})

    async def model(self, request: Request) -> Response:
        """One model the caller may ask for; any other is the same 404 as an unknown one, naming only the caller's
        own models, so a key learns nothing of aliases outside its `models`."""
        refused = await self._admitted(request)
        if refused is not None:
            return refused
        identity = identity_of(request.scope)
        model_id: str = request.path_params["model_id"]
        alias = self.config.models.get(model_id)
        if identity.allows_model(model_id):
            if alias is not None:
                return JSONResponse(_model(model_id, alias.provider))
            if self.config.default_provider is not None:  # the default provider serves any other name
                return JSONResponse(_model(model_id, self.config.default_provider))
        known = ", ".join(sorted(name for name in self.config.models if identity.allows_model(name))) or "none"
        message = f"The model '{model_id}' does not exist here. Models: {known}."
        return JSONResponse(error_body(message, "invalid_request_error", "model", "model_not_found"), 404)

    async def _admitted(self, request: Request) -> Response | None:
        """A model look-up counts against the caller's requests a minute (it holds no concurrency slot and spends
        no upstream tokens); the 429 when that is reached, else None."""
        try:
            await self.engine.admit(identity_of(request.scope), hold=False, spends=False)
        except GatewayError as exc:
            return JSONResponse(exc.body(), exc.status, headers=exc.headers())
        return None

    async def openapi(self, _: Request) -> Response:
        return JSONResponse(self.openapi_document)

    async def docs(self, _: Request) -> Response:
        from fastapi.openapi.docs import get_swagger_ui_html  # the page's HTML only; imported when docs are on

        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{self.title} - Swagger UI")


def _unnamed(server: dict[str, Any]) -> dict[str, Any]:
    """A server's health without the names of the identities it has connections for: their number."""
    if "identities" not in server:
        return server
    shown = {key: value for key, value in server.items() if key != "identities"}
    return {**shown, "identity_connections": len(server["identities"])}


def _model(model_id: str, owner: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": owner}
