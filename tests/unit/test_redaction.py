"""Configured secrets never leave the gateway nor reach a log: keys inside URLs, MCP servers that echo their headers,
and every logger at DEBUG. Log lines logged for a request carry its id, in text and JSON."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from fastmcp import FastMCP

from app.config import parse_config
from app.server.observability import JsonFormatter, TextFormatter
from tests.support import UPSTREAM, Upstream, chat_body, completion, free_port, make_config

KEY = "sk-live-0123456789abcdef"
EXTRA = "org-secret-header-value"
MCP_TOKEN = "mcp-token-9876543210"
GATEWAY_KEY = "gw-key-abcdefgh"


def keyed_config(base_url: str, **extra: Any) -> Any:
    provider = {"base_url": base_url, "api_key": KEY, "extra_headers": {"X-Org": EXTRA}, "max_retries": 0}
    return make_config(providers={"up": provider}, tool_sets={}, mcpServers={}, **extra)


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:{port}/v1?api-version=2024-06-01&key=" + KEY,
        "http://user:" + KEY + "@127.0.0.1:{port}/v1",
    ],
)
async def test_a_key_inside_the_base_url_is_not_in_the_502(
    base_url: str, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client, _ = await gateway_factory(keyed_config(base_url.format(port=free_port())), targets={})
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_unreachable"
    assert KEY not in response.text and "[redacted]" in response.text
    assert "api-version=2024-06-01" in response.text or "user:" in response.text, "only the secret goes"
    assert KEY not in caplog.text


def _echo_server() -> FastMCP:
    server = FastMCP("echo")

    @server.tool
    def whoami() -> str:
        """Report the credentials this server received."""
        return f"authorized with Bearer {MCP_TOKEN}"

    @server.tool
    def fail() -> str:
        """Fail, quoting the token."""
        raise ValueError(f"token {MCP_TOKEN} was refused")

    return server


async def test_tool_results_that_echo_a_header_are_redacted(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    servers = {"echo": {"url": "http://mcp.test/mcp", "headers": {"Authorization": f"Bearer {MCP_TOKEN}"}}}
    config = make_config(mcpServers=servers, tool_sets={})
    client, _ = await gateway_factory(config, targets={"echo": _echo_server()})
    upstream.script(completion(calls=[("echo__whoami", {}), ("echo__fail", {})]), completion("done"))
    caplog.set_level(logging.INFO)
    response = await client.post("/v1/chat/completions", json=chat_body("who am i"))
    assert response.status_code == 200
    mcp_lines = [record for record in caplog.records if record.name == "toolsift.mcp"]
    assert [record.getMessage() for record in mcp_lines] == ["mcp tool error server=echo tool=fail"]
    assert mcp_lines[0].request_id == response.headers["x-request-id"], "MCP lines carry the request id"
    results = [message["content"] for message in upstream.requests[1]["messages"][-2:]]
    assert results[0] == "authorized with [redacted]", "the whole header value goes, scheme included"
    assert MCP_TOKEN not in results[1] and "[redacted]" in results[1]


async def test_secrets_in_third_party_debug_logs_are_redacted(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """httpx logs the full upstream URL; a library's debug line quoting a remote MCP URL with its token."""
    caplog.set_level(logging.DEBUG)
    servers = {"remote": {"url": f"http://127.0.0.1:{free_port()}/mcp?token={MCP_TOKEN}", "startup_timeout": 2}}
    config = make_config(mcpServers=servers, tool_sets={})
    client, gateway = await gateway_factory(config, targets={})
    upstream.script(completion("hi"))
    await client.post("/v1/chat/completions", json=chat_body("x"))
    logging.getLogger("mcp.client.streamable_http").debug("Connecting to %s", servers["remote"]["url"])
    assert gateway.mcp.health()["remote"]["state"] == "down"
    assert MCP_TOKEN not in json.dumps(gateway.mcp.health())
    assert MCP_TOKEN not in caplog.text and "token=[redacted]" in caplog.text
    formatted = "\n".join(TextFormatter().format(record) for record in caplog.records)
    assert MCP_TOKEN not in formatted and "sk-test-secret" not in formatted


def test_what_counts_as_a_secret() -> None:
    raw = {
        "providers": {
            "up": {"api_key": "${KEY}", "extra_headers": {"Authorization": "Bearer tok-123456"}, "base_url": UPSTREAM},
            "unset": {"api_key": "x", "extra_headers": {"Authorization": "Bearer ${UNSET}"}},
        },
        "auth": {"api_keys": [GATEWAY_KEY]},
        "mcpServers": {
            "local": {
                "command": "server",
                "args": ["--verbose", "/srv/data"],
                "env": {"TOKEN": "${MCP_ENV}", "MODE": "debug", "URL": "https://x/${HOST}"},
            },
            "remote": {"url": "https://mcp.test/m?access_token=qs-token-1&page=2", "headers": {"X-Key": "hdr-1234"}},
        },
        "sessions": {"redis_url": "redis://:redis-pass-1@localhost:6379/0"},
    }
    environ = {"KEY": KEY, "MCP_ENV": MCP_TOKEN, "HOST": "example.org"}
    secrets = parse_config(raw, environ=environ).secrets()
    expected = {KEY, "Bearer tok-123456", "tok-123456", GATEWAY_KEY, MCP_TOKEN, "https://x/example.org"}
    expected |= {"example.org", "qs-token-1", "hdr-1234", "redis-pass-1", "x"}
    assert secrets == expected, "literal flags, paths and modes are not secrets; a bare `Bearer` is not either"


async def test_short_values_are_not_redacted(upstream: Upstream, gateway_factory: Any) -> None:
    provider = {"base_url": UPSTREAM, "api_key": "abc", "max_retries": 0}
    client, _ = await gateway_factory(make_config(providers={"up": provider}, tool_sets={}, mcpServers={}), targets={})
    upstream.script(httpx.Response(400, json={"error": {"message": "abc is a bad value", "type": "invalid"}}))
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.json()["error"]["message"].endswith("abc is a bad value")


async def test_retry_and_fallback_lines_carry_the_request_id(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    providers = {"up": {"base_url": UPSTREAM, "api_key": KEY, "max_retries": 1, "retry_base_delay": 0}}
    models = {
        "fast": {"provider": "up", "model": "a", "fallbacks": ["backup"]},
        "backup": {"provider": "up", "model": "b"},
    }
    client, _ = await gateway_factory(
        make_config(providers=providers, models=models, tool_sets={}, mcpServers={}), targets={}
    )
    busy = httpx.Response(503, json={"error": {"message": "busy", "type": "server_error"}})
    upstream.script(busy, busy, completion("fine"))
    caplog.set_level(logging.INFO)
    response = await client.post("/v1/chat/completions", json=chat_body("x"), headers={"x-request-id": "req-trace-1"})
    assert response.status_code == 200
    lines = [record for record in caplog.records if record.name == "toolsift.upstream"]
    assert [record.getMessage().split()[1] for record in lines] == ["retry", "fallback"]
    assert all(TextFormatter().format(record).endswith(" id=req-trace-1") for record in lines)
    assert all(json.loads(JsonFormatter().format(record))["request_id"] == "req-trace-1" for record in lines)


async def test_a_forwarded_client_key_is_redacted_for_its_request(upstream: Upstream, gateway_factory: Any) -> None:
    provider = {"base_url": UPSTREAM, "forward_client_auth": True, "max_retries": 0}
    client, _ = await gateway_factory(make_config(providers={"up": provider}, tool_sets={}, mcpServers={}), targets={})
    caller_key = "sk-caller-own-key-42"
    upstream.script(httpx.Response(401, json={"error": {"message": f"Bad key {caller_key}", "type": "auth"}}))
    response = await client.post(
        "/v1/chat/completions", json=chat_body("x"), headers={"Authorization": f"Bearer {caller_key}"}
    )
    assert upstream.headers[0]["authorization"] == f"Bearer {caller_key}", "the key itself still goes upstream"
    assert response.status_code == 401 and response.json()["error"]["message"].endswith("Bad key [redacted]")
