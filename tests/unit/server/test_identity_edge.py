"""The edge with identities: the log line and the console name the identity (never its key), and every refusal
on /mcp (key, body size, tool set) is a JSON-RPC error."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Upstream, chat_body, completion, make_config

KEYS = [{"name": "alice", "key": "gw-alice", "tool_set": "money"}, "gw-plain"]
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


async def test_the_log_line_and_the_console_name_the_identity(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    config = make_config(auth={"api_keys": KEYS, "admin_keys": ["gw-admin"]})
    client, _ = await gateway_factory(config)
    caplog.set_level("INFO", logger="toolsift")
    upstream.script(completion("hi"))
    response = await client.post(
        "/v1/chat/completions", json=chat_body("x"), headers={"authorization": "Bearer gw-alice"}
    )
    assert response.status_code == 200
    line = next(record.getMessage() for record in caplog.records if record.getMessage().startswith("request id="))
    assert "identity=alice" in line and "gw-alice" not in caplog.text
    recent = (await client.get("/admin/requests", headers={"authorization": "Bearer gw-admin"})).json()
    assert recent["requests"][0]["identity"] == "alice"


async def test_every_refusal_on_mcp_is_a_json_rpc_error(gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": KEYS}, max_request_bytes=2048))
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    unauthenticated = await client.post("/mcp", json=message, headers=MCP_HEADERS)
    assert unauthenticated.status_code == 401 and unauthenticated.headers["www-authenticate"] == "Bearer"
    too_large = await client.post(
        "/mcp",
        json={**message, "params": {"x": "y" * 4096}},
        headers={**MCP_HEADERS, "authorization": "Bearer gw-plain"},
    )
    assert too_large.status_code == 413
    narrowed = await client.post(
        "/mcp?tool_set=notes_only", json=message, headers={**MCP_HEADERS, "authorization": "Bearer gw-alice"}
    )
    assert narrowed.status_code == 403
    unknown = await client.post(
        "/mcp?tool_set=nope", json=message, headers={**MCP_HEADERS, "authorization": "Bearer gw-alice"}
    )
    assert unknown.status_code == 400
    for response, code in [
        (unauthenticated, "invalid_api_key"),
        (too_large, "payload_too_large"),
        (narrowed, "tool_set_not_allowed"),
        (unknown, "unknown_tool_set"),
    ]:
        body = response.json()
        assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32600 and body["error"]["data"]["code"] == code


async def test_the_models_list_shows_an_identity_its_own_models(gateway_factory: Any) -> None:
    models = {"fast": {"provider": "up", "model": "a"}, "smart": {"provider": "up", "model": "b"}}
    keys = [{"name": "alice", "key": "gw-alice", "models": ["fast"]}, "gw-plain"]
    client, _ = await gateway_factory(make_config(auth={"api_keys": keys}, models=models))
    listed = await client.get("/v1/models", headers={"authorization": "Bearer gw-alice"})
    assert [model["id"] for model in listed.json()["data"]] == ["fast"]
    everything = await client.get("/v1/models", headers={"authorization": "Bearer gw-plain"})
    assert [model["id"] for model in everything.json()["data"]] == ["fast", "smart"]


async def test_a_model_outside_the_identitys_list_is_not_found(gateway_factory: Any) -> None:
    models = {"fast": {"provider": "up", "model": "a"}, "smart": {"provider": "up", "model": "b"}}
    keys = [{"name": "alice", "key": "gw-alice", "models": ["fast"]}, "gw-plain"]
    client, _ = await gateway_factory(make_config(auth={"api_keys": keys}, models=models))
    alice = {"authorization": "Bearer gw-alice"}
    assert (await client.get("/v1/models/fast", headers=alice)).json()["id"] == "fast"
    hidden = await client.get("/v1/models/smart", headers=alice)
    unknown = await client.get("/v1/models/nothing-by-this-name", headers=alice)
    for answer in (hidden, unknown):
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "model_not_found"
        assert "smart" not in answer.json()["error"]["message"].replace("'smart'", "")
    assert hidden.json()["error"]["message"] == unknown.json()["error"]["message"].replace(
        "nothing-by-this-name", "smart"
    )
    plain = await client.get("/v1/models/smart", headers={"authorization": "Bearer gw-plain"})
    assert plain.status_code == 200 and plain.json()["id"] == "smart"
