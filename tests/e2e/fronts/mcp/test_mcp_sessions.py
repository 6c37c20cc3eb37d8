"""MCP front over HTTP, lazy mode with gateway keys: what a search enables follows the client that searched.

A client is a key in one MCP session on handshake-era protocols (the TypeScript SDK and the Inspector still
use them), or the key alone on 2026-07-28, which has no sessions. Whatever other clients of the same key did,
a search makes its found tools listed and callable for the client that searched.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.mcp import ListChanged, mcp_client, names, serve_mcp_gateway, text

QUOTE = "finance__get_stock_quote"
RATES = "finance__get_exchange_rates"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_mcp_gateway(tmp_path_factory.mktemp("sessions"), auth={"api_keys": ["key-carol", "key-dave"]})


class OldProtocolSession:
    """A handshake at protocol 2025-03-26 over plain HTTP, as older MCP clients do it: `initialize`, then
    every request carries the `Mcp-Session-Id` the server gave."""

    def __init__(self, http: httpx.AsyncClient, url: str, key: str) -> None:
        self.http, self.url = http, url
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
        self.ids = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        response = await self.http.post(self.url, json=body, headers=self.headers)
        response.raise_for_status()
        if "mcp-session-id" in response.headers:
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        if response.headers["content-type"].startswith("text/event-stream"):
            for line in response.text.splitlines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("id") == self.ids:
                        return dict(message["result"])
            raise AssertionError(f"no answer to {method}: {response.text[:300]}")
        return dict(response.json()["result"])

    async def start(self) -> OldProtocolSession:
        info = {"name": "old-client", "version": "1"}
        started = await self.request(
            "initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": info}
        )
        assert started["protocolVersion"] == "2025-03-26"
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.url, json=note, headers=self.headers)
        return self

    async def tool_names(self) -> list[str]:
        return sorted(tool["name"] for tool in (await self.request("tools/list", {}))["tools"])

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        return bool(result.get("isError")), str(result["content"][0]["text"])


async def wait_for(changes: ListChanged) -> None:
    for _ in range(100):
        if changes.count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no notifications/tools/list_changed")


async def test_a_handshake_session_after_a_modern_one_gets_what_it_searched(gateway: str) -> None:
    url = f"{gateway}/mcp"
    async with mcp_client(url, "key-carol") as modern:
        assert modern.protocol_version == "2026-07-28"
        found = await modern.call_tool_mcp("search_tools", {"tool_names": ["get_stock_quote"]})
        assert QUOTE in text(found) and QUOTE in await names(modern)
    changes = ListChanged()
    async with mcp_client(url, "key-carol", changes, mode="legacy") as legacy:
        assert legacy.protocol_version == "2025-11-25"
        assert QUOTE not in await names(legacy), "a new MCP session starts from the loaded tools"
        found = await legacy.call_tool_mcp("search_tools", {"tool_names": ["get_stock_quote"]})
        assert "already loaded" not in text(found)
        await wait_for(changes)
        assert QUOTE in await names(legacy)
        ran = await legacy.call_tool_mcp(QUOTE, {"symbol": "AAPL"})
        assert not ran.is_error and "AAPL" in text(ran)
        async with mcp_client(url, "key-carol", mode="legacy") as other:
            assert QUOTE not in await names(other), "another MCP session of the same key is another client"
    async with mcp_client(url, "key-carol") as modern:
        assert QUOTE in await names(modern), "the key's sessionless client keeps what it found"
        ran = await modern.call_tool_mcp(QUOTE, {"symbol": "MSFT"})
        assert not ran.is_error and "MSFT" in text(ran)


async def test_a_modern_client_after_an_older_protocol_session_gets_what_it_searched(gateway: str) -> None:
    url = f"{gateway}/mcp"
    rates = {"base": "USD"}
    async with httpx.AsyncClient(timeout=30) as http:
        old = await OldProtocolSession(http, url, "key-dave").start()
        assert RATES not in await old.tool_names()
        failed, message = await old.call(RATES, rates)
        assert failed and "is not loaded yet, so it was not run" in message
        _, found = await old.call("search_tools", {"tool_names": ["get_exchange_rates"]})
        assert RATES in found and "already loaded" not in found
        assert RATES in await old.tool_names()
        failed, message = await old.call(RATES, rates)
        assert not failed and "USD" in message
        async with mcp_client(url, "key-dave") as modern:
            assert RATES not in await names(modern), "what the MCP session enabled stays in it"
            found_text = text(await modern.call_tool_mcp("search_tools", {"tool_names": ["get_exchange_rates"]}))
            assert "already loaded" not in found_text
            assert RATES in await names(modern)
            ran = await modern.call_tool_mcp(RATES, rates)
            assert not ran.is_error and "USD" in text(ran)
        again = await OldProtocolSession(http, url, "key-dave").start()
        assert RATES not in await again.tool_names()
        _, found = await again.call("search_tools", {"tool_names": ["get_exchange_rates"]})
        assert "already loaded" not in found and RATES in await again.tool_names()
        assert RATES in await old.tool_names(), "the first session still has it"


async def test_another_key_cannot_use_a_sessions_id(gateway: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        carol = await OldProtocolSession(http, f"{gateway}/mcp", "key-carol").start()
        stolen = {**carol.headers, "Authorization": "Bearer key-dave"}
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}
        response = await http.post(f"{gateway}/mcp", json=body, headers=stolen)
        assert response.status_code == 404
