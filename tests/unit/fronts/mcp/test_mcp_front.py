"""The MCP front in memory: changes of the backend reach the front and its sessions."""

from __future__ import annotations

from fastmcp import Client

from app.engine.api import Engine
from tests.support.mcp import ListChanged, growing_server, names, text, wait_for


async def test_backend_changes_reach_the_front_and_its_sessions() -> None:
    from app.config import parse_config
    from app.engine.gateway import Gateway
    from app.fronts.mcp.server import McpFront

    lab = {"lab": {"command": "unused", "defer_loading": True}}
    quick = {"rebuild_interval_seconds": 0.05}  # the change is listed at once, not a second later (the default)
    config = parse_config({"mcpServers": lab, "mcp_limits": quick}, environ={})
    gateway = Gateway(config, {"lab": growing_server()})
    await gateway.start()
    manager = gateway.mcp
    try:
        front = McpFront(Engine(gateway), "full")
        changes = ListChanged()
        async with Client(front.server, message_handler=changes) as client:
            assert await names(client) == ["lab__enable_spectrometer"]
            await manager.call_raw("lab", "enable_spectrometer", {})
            await wait_for(lambda: "lab__measure_spectrum" in manager.catalog.tools)
            assert sorted(await names(client)) == ["lab__enable_spectrometer", "lab__measure_spectrum"]
            await wait_for(lambda: changes.count >= 1)
            ran = await client.call_tool_mcp("lab__measure_spectrum", {"sample": "neon"})
            assert "neon" in text(ran)
    finally:
        await gateway.stop()
