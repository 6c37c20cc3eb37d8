"""The MCP front over stdio, driven by fastmcp's client as an MCP client (Claude Desktop, Cursor) would."""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import StdioTransport

from tests.support import ROOT, SERVERS
from tests.support.mcp import ListChanged, text

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


@pytest.fixture(scope="module")
def front_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = {
        "mcpServers": {
            "weather": {"command": "python", "args": [str(SERVERS / "weather.py")]},
            "finance": {"command": "python", "args": [str(SERVERS / "finance.py")], "defer_loading": True},
            "notes": {"command": "python", "args": [str(SERVERS / "notes.py")], "defer_loading": True},
        },
        "tool_sets": {"money": {"servers": {"finance": ["convert_currency", "get_exchange_rates"]}}},
    }
    path = tmp_path_factory.mktemp("front") / "config.json"
    path.write_text(json.dumps(config))
    return path


def front(config: Path, *options: str, handler: MessageHandler | None = None) -> Client[Any]:
    transport = StdioTransport(TOOLSIFT, ["mcp", "--stdio", "--config", str(config), *options], cwd=str(ROOT))
    return Client(transport, message_handler=handler, timeout=60, init_timeout=60)


async def names(client: Client[Any]) -> list[str]:
    return [tool.name for tool in await client.list_tools()]


async def test_lazy_mode_lists_few_tools_and_enables_found_ones(front_config: Path) -> None:
    changes = ListChanged()
    async with front(front_config, "--mode", "lazy", handler=changes) as client:
        listed = await names(client)
        assert sorted(listed) == sorted(
            [
                "weather__get_current_weather",
                "weather__get_forecast",
                "weather__get_alerts",
                "weather__get_air_quality",
                "search_tools",
            ]
        )
        search = next(tool for tool in await client.list_tools() if tool.name == "search_tools")
        assert "- finance (7 tools)" in (search.description or "") and "- notes (9 tools)" in (search.description or "")

        hidden = await client.call_tool_mcp(
            "finance__convert_currency", {"amount": 1, "from_currency": "USD", "to_currency": "EUR"}
        )
        assert hidden.is_error and "search_tools" in text(hidden)
        unknown = await client.call_tool_mcp("finance__teleport", {})
        assert unknown.is_error and "Unknown tool 'finance__teleport'" in text(unknown)

        found = await client.call_tool_mcp("search_tools", {"query": "convert currency"})
        assert "finance__convert_currency" in text(found)
        for _ in range(50):
            if changes.count:
                break
            await asyncio.sleep(0.05)
        assert changes.count >= 1, "the client is told the tool list changed"
        assert "finance__convert_currency" in await names(client)
        ran = await client.call_tool_mcp(
            "finance__convert_currency", {"amount": 10, "from_currency": "USD", "to_currency": "EUR"}
        )
        assert not ran.is_error and "EUR" in text(ran)

        async with front(front_config, "--mode", "lazy") as other:
            assert "finance__convert_currency" not in await names(other), "another session is unaffected"


async def test_proxy_mode_validates_then_runs(front_config: Path) -> None:
    async with front(front_config, "--mode", "proxy") as client:
        listed = await names(client)
        assert "call_tool" in listed and "search_tools" in listed and not any(n.startswith("finance__") for n in listed)
        found = await client.call_tool_mcp("search_tools", {"query": "exchange rates"})
        assert '"input_schema"' in text(found) and "finance__get_exchange_rates" in text(found)
        bad = await client.call_tool_mcp(
            "call_tool", {"name": "finance__convert_currency", "arguments": {"amount": "lots"}}
        )
        assert bad.is_error and "invalid arguments" in text(bad) and "Nothing was run" in text(bad)
        good = await client.call_tool_mcp(
            "call_tool",
            {
                "name": "finance__convert_currency",
                "arguments": {"amount": 2, "from_currency": "EUR", "to_currency": "USD"},
            },
        )
        assert not good.is_error and "USD" in text(good)


async def test_full_mode_lists_everything_and_tool_sets_restrict_every_mode(front_config: Path) -> None:
    async with front(front_config, "--mode", "full") as client:
        assert len(await names(client)) == 4 + 7 + 9
    async with front(front_config, "--mode", "full", "--tool-set", "money") as client:
        assert sorted(await names(client)) == ["finance__convert_currency", "finance__get_exchange_rates"]
    async with front(front_config, "--mode", "lazy", "--tool-set", "money") as client:
        assert await names(client) == ["search_tools"]
        found = await client.call_tool_mcp("search_tools", {"query": "stock quote"})
        assert "get_stock_quote" not in text(found)


async def test_the_stdio_front_finds_by_meaning_once_its_tools_are_embedded(front_config: Path) -> None:
    """Keyword search finds nothing for "write down a reminder"; the front's search turns hybrid by itself."""
    async with front(front_config, "--mode", "proxy") as client:
        for _ in range(120):
            found = text(await client.call_tool("search_tools", {"query": "write down a reminder"}))
            if "weak matches" in found:
                break
            assert found.startswith("No tools found matching")  # keywords only, while the model loads
            await asyncio.sleep(0.5)
        first = next(line for line in found.splitlines() if line.startswith("- "))
        assert first.startswith("- notes__create_note"), found


async def test_server_info_names_toolsift_and_its_version(front_config: Path) -> None:
    async with front(front_config) as client:
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("toolsift", version("toolsift"))
