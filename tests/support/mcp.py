"""MCP helpers: the front over HTTP in a served gateway, its clients, and in-memory servers that change."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
from fastmcp import Client, Context, FastMCP
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import StreamableHttpTransport

from tests.support.gateway import SERVERS, served_gateway
from tests.support.scripted import free_port

# The finance example server's tools, in the order it lists them.
FINANCE = [
    "convert_currency",
    "get_exchange_rates",
    "get_stock_quote",
    "calculate_loan_payment",
    "compound_interest",
    "portfolio_value",
]


class ListChanged(MessageHandler):
    """Counts the tools/list_changed notifications a client receives."""

    def __init__(self) -> None:
        self.count = 0

    async def on_tool_list_changed(self, message: mcp_types.ToolListChangedNotification) -> None:
        self.count += 1


def text(result: mcp_types.CallToolResult) -> str:
    """The text of a tool result's first block."""
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


def serve_mcp_gateway(tmp: Path, **extra: Any) -> Iterator[str]:
    """`toolsift serve` with weather and finance (deferred) over stdio; yields its base URL."""
    config = {
        "mcpServers": {
            "weather": {"command": "python", "args": [str(SERVERS / "weather.py")]},
            "finance": {"command": "python", "args": [str(SERVERS / "finance.py")], "defer_loading": True},
        },
        "tool_sets": {"money": {"servers": {"finance": ["convert_currency"]}}},
        **extra,
    }
    path = tmp / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def mcp_client(url: str, key: str | None = None, handler: Any = None, mode: Any = "auto") -> Client[Any]:
    """A client of the MCP front at `url`, as the gateway key `key` when given."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(StreamableHttpTransport(url, headers=headers), message_handler=handler, timeout=30, mode=mode)


async def names(connected: Client[Any]) -> list[str]:
    """The listed tool names, sorted."""
    return sorted(tool.name for tool in await connected.list_tools())


def growing_server() -> FastMCP:
    """A server whose one tool adds a second and says so with tools/list_changed."""
    server = FastMCP("lab")

    @server.tool
    async def enable_spectrometer(ctx: Context) -> str:
        """Switch on the spectrometer, which adds its measuring tool."""

        def measure_spectrum(sample: str) -> str:
            """Measure the light spectrum of a sample."""
            return f"spectrum of {sample}: peaks at 486nm, 656nm"

        server.tool(measure_spectrum)
        await ctx.send_notification(mcp_types.ToolListChangedNotification())
        return "spectrometer on"

    return server


async def wait_for(predicate: Any, seconds: float = 20.0) -> None:
    """Poll until `predicate()` holds; an AssertionError after `seconds`."""
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")
