"""MCP servers are untrusted input: a listing is taken within limits (tools per server, name, description and
schema size), the catalog and its discovery are rebuilt in the worker pool, and a storm of tools/list_changed
costs one rebuild per interval, while the gateway keeps answering."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.tools import Tool

from app.discovery import index as index_module
from app.mcp.client import connection, connections
from tests.support import make_config
from tests.support.mcp import wait_for

LIMITS = {"max_tools_per_server": 40, "max_description_chars": 500, "max_schema_bytes": 4000, "max_name_chars": 64}


def hostile_server() -> FastMCP:
    """45 ordinary tools, one with a 12,000-character description, one with a long name, one with a huge schema,
    and `storm`, which adds a tool and says so 50 times in a row."""
    server = FastMCP("hostile")
    server.add_tool(Tool.from_function(lambda: "ok", name="rambling", description="blah " * 2400))
    for i in range(45):
        server.add_tool(Tool.from_function(lambda: "ok", name=f"tool_{i}", description=f"Ordinary tool {i}"))
    server.add_tool(Tool.from_function(lambda: "ok", name="n" * 200, description="a name too long"))
    properties = {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(100)}
    schema = {"type": "object", "properties": properties}
    server.add_tool(Tool(name="bloated", description="a huge schema", parameters=schema))

    @server.tool
    async def storm(ctx: Context) -> str:
        """Add 50 tools, announcing each."""
        for i in range(50):
            server.add_tool(Tool.from_function(lambda: "ok", name=f"late_{i}", description=f"Late tool {i}"))
            await ctx.send_notification(mcp_types.ToolListChangedNotification())
        return "stormed"

    return server


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every catalog of listed tools and every index built, and whether it was built on the event loop's thread."""
    seen: list[tuple[str, bool]] = []
    real_catalog, real_index = connections.build_catalog, index_module.ToolIndex.__init__

    def catalog(config: Any, listings: Any, version: int) -> Any:
        if listings:  # not the empty catalog a manager starts with
            seen.append(("catalog", threading.current_thread() is threading.main_thread()))
        return real_catalog(config, listings, version)

    def index(self: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(("index", threading.current_thread() is threading.main_thread()))
        real_index(self, *args, **kwargs)

    monkeypatch.setattr(connections, "build_catalog", catalog)
    monkeypatch.setattr(index_module.ToolIndex, "__init__", index)
    return seen


async def test_a_listing_is_taken_within_limits_and_built_off_the_loop(
    gateway_factory: Any, built: list[tuple[str, bool]]
) -> None:
    config = make_config(
        mcpServers={"hostile": {"command": "unused", "defer_loading": True}}, tool_sets={}, mcp_limits=LIMITS
    )
    client, gateway = await gateway_factory(config, targets={"hostile": hostile_server()})
    tools = gateway.mcp.catalog.servers["hostile"].tools
    assert len(tools) == LIMITS["max_tools_per_server"]
    names = {entry.original_name for entry in tools}
    assert "n" * 200 not in names and "bloated" not in names
    assert all(len(entry.description) <= LIMITS["max_description_chars"] for entry in tools)
    health = (await client.get("/healthz")).json()
    notes = " ".join(health["servers"]["hostile"]["limits"])
    assert "name over 64" in notes and "input schema over 4,000 bytes" in notes
    assert "over max_tools_per_server (40)" in notes and "description(s) cut to 500" in notes
    assert built and not any(on_loop for _, on_loop in built), f"built on the event loop: {built}"


async def test_a_storm_of_list_changed_costs_one_rebuild_per_interval(
    gateway_factory: Any, built: list[tuple[str, bool]]
) -> None:
    limits = {**LIMITS, "max_tools_per_server": 1000, "rebuild_interval_seconds": 0.5}
    config = make_config(mcpServers={"hostile": {"command": "unused"}}, tool_sets={}, mcp_limits=limits)
    client, gateway = await gateway_factory(config, targets={"hostile": hostile_server()})
    before = gateway.mcp.rebuilds
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    beating = asyncio.ensure_future(heartbeat())
    text, failed = await gateway.mcp.call_tool("hostile", "storm", {})
    assert (text, failed) == ("stormed", False)
    await wait_for(lambda: "hostile__late_49" in gateway.mcp.catalog.tools, 10)
    assert (await client.get("/healthz")).status_code == 200
    beating.cancel()
    assert gateway.mcp.rebuilds - before <= 4, f"{gateway.mcp.rebuilds - before} rebuilds for 50 changes"
    assert not any(on_loop for _, on_loop in built), "a rebuild ran on the event loop"
    assert ticks > 5


def counted_server(seconds_per_listing: float) -> tuple[FastMCP, list[str]]:
    """A server that records every tools/list and ping it answers; each listing takes `seconds_per_listing`."""
    from fastmcp.server.middleware import Middleware

    seen: list[str] = []

    class Count(Middleware):
        async def on_list_tools(self, context: Any, call_next: Any) -> Any:
            seen.append("list")
            await asyncio.sleep(seconds_per_listing)
            return await call_next(context)

        async def on_request(self, context: Any, call_next: Any) -> Any:
            if context.method == "ping":
                seen.append("ping")
            return await call_next(context)

    server = FastMCP("counted", middleware=[Count()])

    @server.tool
    async def churn(ctx: Context) -> str:
        """Announce a changed listing 20 times."""
        for _ in range(20):
            await ctx.send_notification(mcp_types.ToolListChangedNotification())
            await asyncio.sleep(0.02)
        return "churned"

    return server, seen


async def test_an_idle_server_is_pinged_not_listed_again(gateway_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A liveness probe must not cost a whole listing: a 10,000-tool listing is parsed on the loop."""
    monkeypatch.setattr(connection, "LIVENESS_INTERVAL", 0.05)
    server, seen = counted_server(0.0)
    config = make_config(mcpServers={"counted": {"command": "unused"}}, tool_sets={})
    await gateway_factory(config, targets={"counted": server})
    await wait_for(lambda: seen.count("ping") >= 3, 10)
    assert seen.count("list") == 1, seen


async def test_listings_are_paced_by_how_long_the_last_one_took(gateway_factory: Any) -> None:
    """A listing that took t is not repeated within LISTING_PACE * t, so a storm from a slow (large) server leaves
    the loop free most of the time; the last change is still listed."""
    server, seen = counted_server(0.2)
    limits = {"rebuild_interval_seconds": 0.05}
    config = make_config(mcpServers={"counted": {"command": "unused"}}, tool_sets={}, mcp_limits=limits)
    _, gateway = await gateway_factory(config, targets={"counted": server})
    started = asyncio.get_running_loop().time()
    assert await gateway.mcp.call_tool("counted", "churn", {}) == ("churned", False)
    await wait_for(lambda: seen.count("list") >= 2, 10)
    await asyncio.sleep(0.5)
    elapsed = asyncio.get_running_loop().time() - started
    listings = seen.count("list") - 1
    # 20 changes in ~0.4 s plus the wait: paced at 5 x 0.2 s, at most one listing per second after the first.
    assert 1 <= listings <= 1 + int(elapsed), f"{listings} listings in {elapsed:.1f} s"


class _Coded(Tool):
    """A tool whose declared output schema holds a catastrophic pattern, and whose result breaks it."""

    async def run(self, arguments: dict[str, Any]) -> Any:
        from fastmcp.tools import ToolResult

        return ToolResult(content="coded", structured_content={"code": "a" * 40 + "!"})


async def test_a_structured_result_is_checked_on_re2_in_the_worker_pool(
    gateway_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP SDK would check it on the event loop with Python's `re`: `^(a+)+$` against 41 characters is 2^40
    steps. The answer is the SDK's own error, and the check ran off the loop."""
    threads: list[bool] = []
    real = connection.first_error

    def spy(instance: Any, schema: Any) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return real(instance, schema)

    monkeypatch.setattr(connection, "first_error", spy)
    server = FastMCP("coded")
    output = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}}}
    server.add_tool(_Coded(name="lookup", description="Look a code up", parameters={"type": "object"},
                           output_schema=output))  # fmt: skip
    config = make_config(mcpServers={"coded": {"command": "unused"}}, tool_sets={})
    _, gateway = await gateway_factory(config, targets={"coded": server})
    text, failed = await gateway.mcp.call_tool("coded", "lookup", {})
    assert failed and "Invalid structured content returned by tool lookup" in text and "does not match" in text
    assert threads == [False]
