"""One MCP front session serving concurrent calls: twelve at once, searches and tool calls mixed, all answer, and
every search keeps what it enabled, over a store that answers on a later turn of the event loop (as Redis does)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastmcp import Client

from app.config import parse_config
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.fronts.mcp.server import McpFront
from app.store.base import Key
from app.store.memory import MemoryStore
from tests.support import example_targets
from tests.support.mcp import FINANCE, names


class RemoteStore(MemoryStore):
    """The memory store, answering each call on a later turn of the event loop, as a store over a network does."""

    async def get(self, key: Key) -> bytes | None:
        await asyncio.sleep(0)
        return await super().get(key)

    async def put(self, key: Key, value: bytes, ttl: float | None = None) -> None:
        await asyncio.sleep(0)
        await super().put(key, value, ttl)


async def test_twelve_concurrent_calls_on_one_session_all_answer_and_keep_what_they_enabled() -> None:
    raw = {
        "mcpServers": {
            "weather": {"command": "unused"},
            "finance": {"command": "unused", "defer_loading": True},
        }
    }
    gateway = Gateway(parse_config(raw, environ={}), example_targets("weather", "finance"))
    await gateway.start()
    try:
        front = McpFront(Engine(gateway), "lazy")
        gateway.mcp_clients.store = RemoteStore(1000, 16 * 1024 * 1024)
        for mode in ["legacy", "legacy", "legacy", "auto", "auto"]:  # five sessions, handshake-era and modern
            async with Client(front.server, mode=mode) as session:
                searches = [
                    session.call_tool_mcp("search_tools", {"tool_names": [name]}) for name in FINANCE
                ]  # fmt: skip
                calls = [session.call_tool_mcp("weather__get_current_weather", {"city": "Paris"}) for _ in range(6)]
                answers: list[Any] = await asyncio.wait_for(asyncio.gather(*searches, *calls), 30)  # a hang guard
                assert [answer.is_error for answer in answers] == [False] * 12
                listed = await names(session)
                assert [name for name in FINANCE if f"finance__{name}" not in listed] == [], "every search kept"
                rates = await session.call_tool_mcp("finance__get_exchange_rates", {"base": "USD"})
                assert not rates.is_error
    finally:
        await gateway.stop()
