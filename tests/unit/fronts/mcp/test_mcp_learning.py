"""The MCP front's searches and calls teach search like a chat's: a proxy client's `search_tools`, then its
`call_tool` of a found tool that succeeds, keeps the pair; a call that fails keeps nothing."""

from __future__ import annotations

from fastmcp import Client

from app.engine.api import Engine
from app.fronts.mcp.server import McpFront
from tests.support.engine import started_engine
from tests.support.gateway import make_config


async def test_a_proxy_clients_search_and_successful_call_tool_are_learned() -> None:
    async with started_engine(make_config()) as (gateway, _):
        front = McpFront(Engine(gateway), "proxy")
        async with Client(front.server) as client:
            await client.call_tool_mcp("search_tools", {"query": "create a note"})
            failed = await client.call_tool_mcp("call_tool", {"name": "notes__create_note", "arguments": {}})
            assert failed.isError
            assert await gateway.learning.listed() == []
            arguments = {"title": "Groceries", "body": "milk"}
            done = await client.call_tool_mcp("call_tool", {"name": "notes__create_note", "arguments": arguments})
            assert not done.isError
        pairs = await gateway.learning.listed()
        assert [(pair.query, pair.tool) for pair in pairs] == [("create a note", "notes__create_note")]
