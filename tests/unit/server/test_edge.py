"""The edge: what a browser can send cross-site, DNS rebinding, CORS with keys, request ids, API docs."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.engine.api import Engine
from app.server.app import create_app
from tests.support import Upstream, chat_body, completion, make_config

CHAT = "/v1/chat/completions"
BODY = b'{"model": "fast", "messages": [{"role": "user", "content": "run the tools"}]}'


def _refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", None]
)
async def test_a_body_that_is_not_declared_json_is_415(
    upstream: Upstream, gateway_factory: Any, content_type: str | None
) -> None:
    client, _ = await gateway_factory()
    headers = {"content-type": content_type} if content_type else {}
    _refused(await client.post(CHAT, content=BODY, headers=headers), 415, "unsupported_media_type")
    assert upstream.requests == [], "nothing ran"
    upstream.script(completion("ok"))
    declared = await client.post(CHAT, content=BODY, headers={"content-type": "application/json; charset=utf-8"})
    assert declared.status_code == 200


async def test_a_foreign_origin_is_refused_before_any_work(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(cors_origins=["https://app.example"]))
    for origin in ("https://evil.example", "null", "http://gw.evil.example", "https://app.example:444"):
        for method, path in (("POST", CHAT), ("GET", "/v1/models"), ("GET", "/healthz"), ("GET", "/nope")):
            response = await client.request(method, path, json=chat_body("x"), headers={"Origin": origin})
            _refused(response, 403, "origin_not_allowed")
            assert "access-control-allow-origin" not in response.headers
    assert upstream.requests == []
    upstream.script(completion("ok"), completion("ok"), completion("ok"))
    for origin in ("http://gw", "HTTP://GW:80", "https://app.example"):
        allowed = await client.post(CHAT, json=chat_body("x"), headers={"Origin": origin})
        assert allowed.status_code == 200, (origin, allowed.text)
    assert (await client.post(CHAT, json=chat_body("x"))).status_code == 200, "no Origin (SDKs, curl) is unchanged"


async def test_a_rebound_host_is_refused_on_a_loopback_gateway_without_keys(
    upstream: Upstream, gateway_factory: Any
) -> None:
    _, gateway = await gateway_factory()
    upstream.router.route(host="127.0.0.1").pass_through()
    transport = httpx.ASGITransport(app=create_app(Engine(gateway)))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        for host in ("evil.example:8000", "evil.example", "127.0.0.1.nip.io:8000", "[::1"):
            for path in (CHAT, "/healthz", "/metrics"):
                response = await client.post(path, json=chat_body("x"), headers={"Host": host})
                _refused(response, 403, "host_not_allowed")
            # the rebound page is "same origin" from the browser's view: the Host check still holds
            response = await client.post(CHAT, json=chat_body("x"), headers={"Host": host, "Origin": f"http://{host}"})
            assert response.status_code == 403
        assert upstream.requests == []
        upstream.script(*[completion("ok")] * 4)
        for host in ("localhost:8000", "LOCALHOST", "127.0.0.1:8000", "[::1]:8000"):
            response = await client.post(CHAT, json=chat_body("x"), headers={"Host": host, "Origin": f"http://{host}"})
            assert response.status_code == 200, (host, response.text)
    keyed = create_app(Engine(await _keyed_gateway(gateway_factory)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=keyed), base_url="http://127.0.0.1:8000") as client:
        response = await client.get("/v1/models", headers={"Host": "gateway.example", "Authorization": "Bearer k"})
        assert response.status_code == 200, "with keys, any host name may be served"


async def _keyed_gateway(gateway_factory: Any) -> Any:
    _, gateway = await gateway_factory(make_config(auth={"api_keys": ["k"]}, cors_origins=["https://app.example"]))
    return gateway


async def test_cors_preflight_needs_no_key_but_everything_else_does(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": ["k"]}, cors_origins=["https://app.example"]))
    origin = {"Origin": "https://app.example"}
    preflight = {**origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
    for path in (CHAT, "/v1/models", "/mcp"):
        answered = await client.options(path, headers=preflight)
        assert answered.status_code == 200, answered.text
        assert answered.headers["access-control-allow-origin"] == "https://app.example"
        assert "authorization" in answered.headers["access-control-allow-headers"].lower()
    refused = await client.post(CHAT, json=chat_body("x"), headers=origin)
    _refused(refused, 401, "invalid_api_key")
    assert refused.headers["access-control-allow-origin"] == "https://app.example", "the browser can read why"
    _refused(await client.options(CHAT, headers=origin), 401, "invalid_api_key")  # not a preflight
    upstream.script(completion("ok"))
    keyed = await client.post(CHAT, json=chat_body("x"), headers={**origin, "Authorization": "Bearer k"})
    assert keyed.status_code == 200 and keyed.headers["access-control-allow-origin"] == "https://app.example"
    assert "x-request-id" in keyed.headers["access-control-expose-headers"]


async def test_every_response_carries_a_request_id(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("ok"))
    responses = [
        await client.get("/healthz"),
        await client.get("/readyz"),
        await client.get("/metrics"),
        await client.get("/v1/models"),
        await client.get("/nope"),
        await client.put("/v1/models", json={}),
        await client.post("/mcp?tool_set=nope", json={}),
        await client.post(CHAT, content=b"{", headers={"content-type": "application/json"}),
        await client.post(CHAT, content=b"{}", headers={"content-type": "text/plain"}),
        await client.post(CHAT, json=chat_body("x")),
    ]
    for response in responses:
        assert response.headers["x-request-id"].startswith("req_"), (response.request.url, response.headers)
        assert len(response.headers.get_list("x-request-id")) == 1
    assert (await client.get("/healthz", headers={"x-request-id": "mine-1"})).headers["x-request-id"] == "mine-1"
    error = (await client.post(CHAT, content=b"{", headers={"x-request-id": "mine-2"})).headers["x-request-id"]
    assert error == "mine-2"


async def test_refusals_preflights_and_the_mcp_front_carry_a_request_id(gateway_factory: Any) -> None:
    config = make_config(cors_origins=["https://app.example"], auth={"api_keys": ["gw-key"]})
    client, _ = await gateway_factory(config)
    preflight = {"origin": "https://app.example", "access-control-request-method": "POST"}
    responses = {
        "preflight": await client.options(CHAT, headers=preflight),
        "mcp preflight": await client.options("/mcp", headers=preflight),
        "refused preflight": await client.options(CHAT, headers={**preflight, "access-control-request-method": "PUT"}),
        "foreign origin": await client.get("/v1/models", headers={"origin": "https://evil.example"}),
        "no key": await client.get("/v1/models"),
        "mcp without key": await client.post("/mcp", json={}),
        "mcp unknown tool set": await client.post(
            "/mcp?tool_set=nope", json={}, headers={"authorization": "Bearer gw-key"}
        ),
    }
    statuses = {name: response.status_code for name, response in responses.items()}
    assert statuses == {
        "preflight": 200,
        "mcp preflight": 200,
        "refused preflight": 400,
        "foreign origin": 403,
        "no key": 401,
        "mcp without key": 401,
        "mcp unknown tool set": 400,
    }
    for name, response in responses.items():
        assert response.headers.get_list("x-request-id")[0].startswith("req_"), name
        assert len(response.headers.get_list("x-request-id")) == 1, name


async def test_api_docs_are_served_only_when_enabled(gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    for path in ("/openapi.json", "/docs", "/redoc"):
        assert (await client.get(path)).status_code == 404
    client, _ = await gateway_factory(make_config(api_docs=True))
    assert (await client.get("/openapi.json")).json()["info"]["title"] == "toolsift"
    assert (await client.get("/docs")).status_code == 200


async def test_a_second_origin_or_host_header_is_checked_too(upstream: Upstream, gateway_factory: Any) -> None:
    _, gateway = await gateway_factory()
    upstream.router.route(host="127.0.0.1").pass_through()
    transport = httpx.ASGITransport(app=create_app(Engine(gateway)))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        own = ("origin", "http://127.0.0.1:8000")
        for extra in [[("origin", "https://evil.example"), own], [("host", "evil.example:8000")]]:
            headers = [*extra, ("host", "127.0.0.1:8000")]
            response = await client.get("/v1/models", headers=headers)
            assert response.status_code == 403, (extra, response.text)
        assert (await client.get("/v1/models", headers=[own])).status_code == 200


async def test_a_forwarded_key_that_is_not_ascii_is_400(upstream: Upstream, gateway_factory: Any) -> None:
    providers = {"up": {"base_url": "http://upstream.test/v1", "forward_client_auth": True, "max_retries": 0}}
    client, _ = await gateway_factory(make_config(providers=providers))
    for name in ("authorization", "x-upstream-authorization"):
        headers = {name: "Bearer sk-\xe9\xff".encode("latin-1"), "content-type": "application/json"}
        response = await client.post(CHAT, content=BODY, headers=headers)
        _refused(response, 400, "invalid_api_key")
        assert "printable ASCII" in response.json()["error"]["message"]
    assert upstream.requests == []
