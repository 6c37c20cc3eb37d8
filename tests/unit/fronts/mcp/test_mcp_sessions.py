"""The MCP front in memory: what its clients enabled is kept for a bounded number of clients."""

from __future__ import annotations

from app.engine.api import Engine
from tests.e2e.fronts.mcp.test_mcp_sessions import QUOTE
from tests.support.mcp import names


async def test_the_front_remembers_a_bounded_number_of_clients() -> None:
    """What clients enabled lives in the sessions' store, under its bounds: old clients go, the newest stay."""
    from fastmcp import Client

    from app.config import parse_config
    from app.engine.gateway import Gateway
    from app.fronts.mcp.server import McpFront
    from app.store.memory import MemoryStore
    from tests.support import example_targets

    raw = {"mcpServers": {"finance": {"command": "unused", "defer_loading": True}}, "sessions": {"max_sessions": 5}}
    config = parse_config(raw, environ={})
    gateway = Gateway(config, example_targets("finance"))
    await gateway.start()
    try:
        front = McpFront(Engine(gateway), "lazy")
        for _ in range(12):
            async with Client(front.server, mode="legacy") as session:
                await session.call_tool_mcp("search_tools", {"tool_names": ["get_stock_quote"]})
                assert QUOTE in await names(session)
        store = gateway.sessions.store
        assert isinstance(store, MemoryStore) and len(store) == 5
    finally:
        await gateway.stop()
