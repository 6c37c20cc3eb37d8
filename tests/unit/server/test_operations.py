"""Gateway keys, metrics and logs."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import pytest

from app.config import ConfigError, parse_config
from app.server.observability import JsonFormatter
from tests.support import Upstream, chat_body, completion, make_config


async def test_gateway_keys_guard_every_endpoint_but_healthz(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": ["gw-key-one", "gw-key-two"]}))
    upstream.script(completion("ok"))
    for method, path in (("GET", "/v1/models"), ("GET", "/metrics"), ("POST", "/v1/chat/completions")):
        missing = await client.request(method, path, json=chat_body("x"))
        assert missing.status_code == 401 and missing.json()["error"]["code"] == "invalid_api_key"
        wrong = await client.request(method, path, json=chat_body("x"), headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
    assert upstream.requests == []
    assert (await client.get("/healthz")).status_code == 200
    right = await client.post(
        "/v1/chat/completions", json=chat_body("x"), headers={"Authorization": "Bearer gw-key-two"}
    )
    assert right.status_code == 200
    assert upstream.headers[0]["authorization"] == "Bearer sk-test-secret", "the gateway key never goes upstream"


def test_a_gateway_key_from_an_unset_variable_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"auth": {"api_keys": ["${TOOLSIFT_KEY}"]}}, environ={})
    assert caught.value.problems == ["auth.api_keys[0]: environment variable TOOLSIFT_KEY is not set"]


async def test_metrics_move_after_a_discovery_exchange(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"query": "convert currency"})]),
        completion(calls=[("finance__convert_currency", {"amount": 1, "from_currency": "USD", "to_currency": "EUR"})]),
        completion(calls=[("finance__convert_currency", {"amount": 1, "from_currency": "USD", "to_currency": "XXX"})]),
        completion("done"),
    )
    assert (await client.post("/v1/chat/completions", json=chat_body("x"))).status_code == 200
    text = (await client.get("/metrics")).text

    def value(line_start: str) -> float:
        line = next(line for line in text.splitlines() if line.startswith(line_start))
        return float(line.rsplit(" ", 1)[1])

    assert value('toolsift_requests_total{status="200",stream="false"}') == 1
    assert value("toolsift_rounds_total") == 4
    assert value("toolsift_search_calls_total") == 1
    assert value("toolsift_tools_discovered_total") >= 1
    assert value('toolsift_mcp_call_seconds_count{server="finance"}') == 2
    assert value('toolsift_mcp_errors_total{server="finance"}') == 1
    assert value('toolsift_upstream_seconds_count{provider="up"}') == 1
    assert value("toolsift_tool_tokens_saved_total") > 1000


async def test_the_upstream_key_never_reaches_any_log(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("search_tools", {"query": "weather"})]), completion("ok"))
    await client.post("/v1/chat/completions", json=chat_body("x"))
    await client.post("/v1/chat/completions", json=chat_body("x", stream=True))
    assert caplog.records and all("sk-test-secret" not in record.getMessage() for record in caplog.records)
    assert "sk-test-secret" not in caplog.text


async def test_json_log_lines_carry_the_request_fields(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolsift")
    client, _ = await gateway_factory()
    upstream.script(completion("ok"))
    await client.post("/v1/chat/completions", json=chat_body("x"), headers={"x-request-id": "r-7"})
    record = next(r for r in caplog.records if getattr(r, "event", None) == "request")
    line = json.loads(JsonFormatter().format(record))
    assert line["event"] == "request" and line["id"] == "r-7" and line["status"] == 200 and line["rounds"] == 1


async def test_metrics_show_a_gateway_key_its_own_identity_and_an_admin_key_every_one(
    upstream: Upstream, gateway_factory: Any
) -> None:
    keys = [{"name": "alice", "key": "gw-alice"}, {"name": "bob", "key": "gw-bob"}, "gw-plain"]
    client, _ = await gateway_factory(make_config(auth={"api_keys": keys, "admin_keys": ["gw-admin"]}))
    for key in ("gw-alice", "gw-bob", "gw-plain"):
        upstream.script(completion("ok"))
        sent = await client.post(
            "/v1/chat/completions", json=chat_body("x"), headers={"authorization": f"Bearer {key}"}
        )
        assert sent.status_code == 200

    def identities(text: str) -> set[str]:
        return {line.split('identity="', 1)[1].split('"', 1)[0] for line in text.splitlines() if 'identity="' in line}

    alice = await client.get("/metrics", headers={"authorization": "Bearer gw-alice"})
    assert alice.status_code == 200 and identities(alice.text) == {"alice"}
    assert 'toolsift_requests_total{status="200",stream="false"} 3.0' in alice.text, "the gateway's own series stay"
    plain = await client.get("/metrics", headers={"x-api-key": "gw-plain"})
    assert identities(plain.text) == {"key-" + hashlib.sha256(b"gw-plain").hexdigest()[:16]}
    scraper = await client.get("/metrics", headers={"authorization": "Bearer gw-admin"})
    assert scraper.status_code == 200 and identities(scraper.text) >= {"alice", "bob"}
    assert (await client.get("/metrics")).status_code == 401
    assert (await client.get("/metrics", headers={"authorization": "Bearer nope"})).status_code == 401
    assert (
        await client.post("/v1/chat/completions", json=chat_body("x"), headers={"authorization": "Bearer gw-admin"})
    ).status_code == 401, "an admin key opens the operators' views only"
