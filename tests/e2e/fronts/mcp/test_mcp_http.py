"""The MCP front over streamable HTTP at /mcp of `toolsift serve`: the gateway key is the client's identity."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest

from tests.support.mcp import ListChanged, mcp_client, names, serve_mcp_gateway, text


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_mcp_gateway(tmp_path_factory.mktemp("keyed"), auth={"api_keys": ["key-alice", "key-bob"]})


@pytest.fixture(scope="module")
def open_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_mcp_gateway(tmp_path_factory.mktemp("open"))


async def test_lazy_over_http_is_per_gateway_key(keyed: str) -> None:
    changes = ListChanged()
    async with mcp_client(f"{keyed}/mcp", "key-alice", changes) as alice, mcp_client(f"{keyed}/mcp", "key-bob") as bob:
        assert len(await names(alice)) == 5 and "search_tools" in await names(alice)
        found = await alice.call_tool_mcp("search_tools", {"tool_names": ["convert_currency"]})
        assert "finance__convert_currency" in text(found)
        for _ in range(50):
            if changes.count:
                break
            await asyncio.sleep(0.05)
        assert changes.count >= 1
        assert "finance__convert_currency" in await names(alice)
        assert "finance__convert_currency" not in await names(bob), "another key is another client"
        ran = await alice.call_tool_mcp(
            "finance__convert_currency", {"amount": 4, "from_currency": "USD", "to_currency": "GBP"}
        )
        assert not ran.is_error and "GBP" in text(ran)


async def test_http_front_needs_a_key_and_honours_tool_sets(keyed: str) -> None:
    refused = httpx.post(f"{keyed}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401 and refused.json()["error"]["data"]["code"] == "invalid_api_key"  # JSON-RPC
    async with mcp_client(f"{keyed}/mcp?tool_set=money", "key-bob") as money:
        assert await names(money) == ["search_tools"]
        found = await money.call_tool_mcp("search_tools", {"server_name": "finance"})
        assert "convert_currency" in text(found) and "get_stock_quote" not in text(found)
    unknown = httpx.post(f"{keyed}/mcp?tool_set=nope", json={}, headers={"Authorization": "Bearer key-bob"})
    assert unknown.status_code == 400 and "Available tool sets: money" in unknown.text


async def test_without_keys_http_serves_proxy_mode_and_says_so(open_gateway: str) -> None:
    async with mcp_client(f"{open_gateway}/mcp") as anonymous:
        tools = {tool.name: tool for tool in await anonymous.list_tools()}
        assert "call_tool" in tools and "no client identity" in (tools["search_tools"].description or "")
        ran = await anonymous.call_tool_mcp(
            "call_tool",
            {
                "name": "finance__convert_currency",
                "arguments": {"amount": 1, "from_currency": "EUR", "to_currency": "JPY"},
            },
        )
        assert not ran.is_error and "JPY" in text(ran)


def test_browser_refusals_on_mcp_are_json_rpc_errors(open_gateway: str) -> None:
    """A loopback gateway without keys, served by uvicorn: a foreign page, a rebound domain and a simple
    cross-site POST are all refused with a JSON-RPC error, before the MCP front sees them."""
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    port = open_gateway.rsplit(":", 1)[1]
    refusals = [
        ({**accept, "origin": "https://evil.example"}, 403),
        ({**accept, "host": f"rebound.example:{port}", "origin": f"http://rebound.example:{port}"}, 403),
        ({**accept, "content-type": "text/plain"}, 415),
    ]
    for headers, status in refusals:
        refused = httpx.post(f"{open_gateway}/mcp", content=ping, headers=headers)
        assert refused.status_code == status, refused.text
        body = refused.json()
        assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32600 and body["error"]["message"]
        assert refused.headers["x-request-id"]
    rebound_health = httpx.get(f"{open_gateway}/healthz", headers={"host": f"rebound.example:{port}"})
    assert rebound_health.status_code == 403 and "DNS rebinding" in rebound_health.json()["error"]["message"]
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}}
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
    same_origin = httpx.post(f"{open_gateway}/mcp", content=initialize, headers={**accept, "origin": open_gateway})
    assert same_origin.status_code == 200 and "serverInfo" in same_origin.text, same_origin.text
