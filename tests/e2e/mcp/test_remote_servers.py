"""Remote MCP servers: streamable HTTP and SSE through the real transports, and one that is not there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import SERVERS, Upstream, chat_body, completion, free_port, make_config
from tests.support.remote import serve_over_http


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from serve_over_http(SERVERS / "finance.py", "http")


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    yield from serve_over_http(SERVERS / "finance.py", "sse")


@pytest.mark.parametrize("kind", ["streamable-http", "sse"])
async def test_remote_server_tools_are_discovered_and_called(
    kind: str, http_url: str, sse_url: str, upstream: Upstream, gateway_factory: Any
) -> None:
    url = http_url if kind == "streamable-http" else sse_url
    servers = {"money": {"url": url, "transport": kind, "headers": {"X-Team": "blue"}, "defer_loading": True}}
    client, gateway = await gateway_factory(make_config(mcpServers=servers, tool_sets={}), targets={})
    health = gateway.mcp.health()["money"]
    assert (health["state"], health["transport"], health["tools"]) == ("up", kind, 7)
    upstream.script(
        completion(calls=[("search_tools", {"query": "loan monthly payment"})]),
        completion(
            calls=[("money__calculate_loan_payment", {"principal": 10000, "annual_rate_percent": 6, "years": 5})]
        ),
        completion("about 193 a month"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("loan?"))
    assert response.status_code == 200
    result = upstream.requests[2]["messages"][-1]["content"]
    assert "193" in result and not result.startswith("Error")


async def test_unreachable_remote_server_is_down_with_its_error(upstream: Upstream, gateway_factory: Any) -> None:
    servers = {"gone": {"url": f"http://127.0.0.1:{free_port()}/mcp", "defer_loading": True}}
    client, gateway = await gateway_factory(
        make_config(mcpServers=servers, tool_sets={}, mcp_startup_timeout=5), targets={}
    )
    assert gateway.mcp.health()["gone"]["state"] == "down"
    health = (await client.get("/healthz")).json()
    assert health["status"] == "degraded" and health["servers"]["gone"]["error"]
    upstream.script(completion("fine"))
    response = await client.post("/v1/chat/completions", json=chat_body("hi"))
    assert response.status_code == 200 and "search_tools" not in upstream.tool_names(0)
