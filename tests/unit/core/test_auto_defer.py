"""A pasted `mcpServers` block gets discovery: `tool_discovery.defer` "auto" defers servers without `defer_loading`
when their tools are large, the same way for the chat front and the MCP front, and again when the catalog changes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP

from app.common import tokens
from app.config import ConfigError, load_config, parse_config
from app.engine.api import Engine
from app.fronts.mcp.server import McpFront
from app.mcp.client.catalog_build import build_catalog
from tests.support import ROOT, Upstream, chat_body, completion, example_targets, make_config

DEMO = json.loads((ROOT / "config.json").read_text())["mcpServers"]


def pasted(**extra: dict[str, Any]) -> dict[str, Any]:
    """The demo's servers as Claude Desktop would have them: command and args, no defer_loading."""
    return {
        name: {"command": server["command"], "args": [str(ROOT / server["args"][0])], **extra.get(name, {})}
        for name, server in DEMO.items()
    }


async def demo_listings() -> dict[str, Any]:
    listings: dict[str, Any] = {}
    for name, server in DEMO.items():
        async with Client(demo_server(server)) as client:
            listings[name] = await client.list_tools()
    return listings


def demo_server(server: dict[str, Any]) -> Any:
    stem = Path(server["args"][0]).stem
    return example_targets(stem)[stem]


def demo_targets() -> dict[str, Any]:
    return {name: demo_server(server) for name, server in DEMO.items()}


async def test_auto_defers_the_pasted_demo_block_and_decides_on_what_is_listed() -> None:
    listings = await demo_listings()
    config = make_config(mcpServers=pasted(), tool_sets={})
    catalog = build_catalog(config, listings, version=1)
    deferral = catalog.deferral
    servers = catalog.servers.items()
    assert deferral.auto_tokens == {name: tokens.count_tools([e.definition for e in s.tools]) for name, s in servers}
    assert 4000 < deferral.auto_total < 5000, "the demo's tools are about 4,400 tokens"
    assert all(entry.deferred for entry in catalog.tools.values())
    assert all(server.deferred for server in catalog.servers.values())
    own = deferral.auto_tokens["weather"]
    weather = f"auto: {deferral.auto_total:,} tokens of tools without defer_loading > 4,000 "
    weather += f"(this server: {own:,} tokens)"
    assert deferral.servers["weather"].reason == weather

    early = build_catalog(config, {"weather": listings["weather"]}, version=2)
    assert not any(entry.deferred for entry in early.tools.values()), "one small server alone stays loaded"
    assert early.deferral.servers["notes"].reason.endswith("(this server: not listed yet)")


async def test_an_explicit_defer_loading_always_wins() -> None:
    listings = await demo_listings()
    kept = make_config(mcpServers=pasted(weather={"defer_loading": False}), tool_sets={})
    below = build_catalog(kept, listings, version=1)
    assert not any(entry.deferred for entry in below.tools.values()), "the other four add up to under 4,000"
    assert below.deferral.servers["weather"].reason == "defer_loading: false"
    lower = {"semantic": {"enabled": False}, "auto_defer_min_tokens": 3000}
    over = build_catalog(make_config(mcpServers=kept.model_dump()["mcp_servers"], tool_discovery=lower), listings, 1)
    assert [name for name, server in over.servers.items() if not server.deferred] == ["weather"]
    hidden = make_config(mcpServers=pasted(weather={"defer_loading": True}), tool_discovery={"defer": "none"})
    none = build_catalog(hidden, listings, version=1)
    assert [name for name, server in none.servers.items() if server.deferred] == ["weather"]
    assert none.deferral.servers["notes"].reason == 'tool_discovery.defer: "none"'


async def test_the_bundled_config_still_loads_weather_and_defers_the_rest() -> None:
    catalog = build_catalog(load_config(ROOT / "config.json", environ={}), await demo_listings(), version=1)
    reasons = {name: (server.deferred, server.reason) for name, server in catalog.deferral.servers.items()}
    assert reasons == {
        "weather": (False, "defer_loading: false"),
        **{name: (True, "defer_loading: true") for name in ("notes", "calendar", "finance", "textkit")},
    }


def test_always_load_tools_stay_loaded_when_auto_defers_their_server() -> None:
    tool = SimpleNamespace(name="big", description="x " * 5000, input_schema={}, meta=None, title=None)
    pinned = SimpleNamespace(**{**vars(tool), "name": "pinned", "meta": {"anthropic/alwaysLoad": True}})
    config = make_config(mcpServers={"lab": {"command": "unused"}}, tool_sets={})
    catalog = build_catalog(config, {"lab": [tool, pinned]}, version=1)
    assert catalog.tools["lab__big"].deferred and not catalog.tools["lab__pinned"].deferred


def test_defer_all_is_an_alias_of_defer_all_and_cannot_contradict_defer() -> None:
    assert parse_config({"tool_discovery": {"defer_all": True}}, environ={}).tool_discovery.defer == "all"
    assert parse_config({"tool_discovery": {"defer_all": False}}, environ={}).tool_discovery.defer == "auto"
    with pytest.raises(ConfigError) as caught:
        parse_config({"tool_discovery": {"defer_all": True, "defer": "none"}}, environ={})
    assert caught.value.problems == ['tool_discovery: defer_all: true contradicts defer: "none"; keep only defer']
    with pytest.raises(ConfigError) as bad:
        parse_config({"tool_discovery": {"defer": "some"}}, environ={})
    assert bad.value.problems[0].startswith("tool_discovery.defer: Input should be 'auto', 'all' or 'none'")


async def test_chat_and_mcp_fronts_both_see_the_pasted_block_deferred(upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(mcpServers=pasted(), tool_sets={})
    client, gateway = await gateway_factory(config, targets=demo_targets())
    upstream.script(completion("x"))
    await client.post("/v1/chat/completions", json=chat_body("hi"))
    assert upstream.tool_names(0) == ["search_tools"]
    assert "- calendar (8 tools)" in upstream.requests[0]["tools"][0]["function"]["description"]
    front = McpFront(Engine(gateway), "lazy")
    async with Client(front.server) as mcp:
        assert [tool.name for tool in await mcp.list_tools()] == ["search_tools"]
    assert all(server["deferred"] for server in gateway.mcp.health().values())


def _growing_server() -> FastMCP:
    server = FastMCP("lab")

    @server.tool
    async def enable_everything(ctx: Context) -> str:
        """Switch on the lab's instruments."""

        def measure(sample: str) -> str:
            return f"measured {sample}"

        server.tool(measure, description="Measure a sample with every instrument of the lab. " * 40)
        await ctx.send_notification(mcp_types.ToolListChangedNotification())
        return "on"

    return server


async def test_a_tool_list_change_that_crosses_the_threshold_defers_for_both_fronts(
    upstream: Upstream, gateway_factory: Any
) -> None:
    discovery = {"semantic": {"enabled": False}, "auto_defer_min_tokens": 300}
    config = make_config(mcpServers={"lab": {"command": "unused"}}, tool_sets={}, tool_discovery=discovery)
    client, gateway = await gateway_factory(config, targets={"lab": _growing_server()})
    front = McpFront(Engine(gateway), "lazy")
    async with Client(front.server) as mcp:
        assert [tool.name for tool in await mcp.list_tools()] == ["lab__enable_everything"]
    upstream.script(completion(calls=[("lab__enable_everything", {})]), completion("on"), completion("x"))
    await client.post("/v1/chat/completions", json=chat_body("switch it on"))
    assert upstream.tool_names(0) == ["lab__enable_everything"], "under the threshold: loaded, no search_tools"
    for _ in range(1000):
        if "lab__measure" in gateway.mcp.catalog.tools:
            break
        await asyncio.sleep(0.02)
    await client.post("/v1/chat/completions", json=chat_body("measure"))
    assert upstream.tool_names(2) == ["search_tools"], "over it after the change: deferred"
    async with Client(front.server) as mcp:
        assert [tool.name for tool in await mcp.list_tools()] == ["search_tools"]
