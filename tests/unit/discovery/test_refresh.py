"""The tool cache follows the servers: list_changed and TTL refreshes rebuild the catalog and manifest."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from tests.support import Upstream, chat_body, completion, make_config
from tests.support.mcp import growing_server, wait_for


async def test_list_changed_rebuilds_catalog_and_manifest(upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(
        mcpServers={"lab": {"command": "unused", "defer_loading": True}}, tool_sets={}, tool_cache_ttl=0
    )
    client, gateway = await gateway_factory(config, targets={"lab": growing_server()})
    version = gateway.mcp.catalog.version
    upstream.script(
        completion(calls=[("search_tools", {"tool_names": ["enable_spectrometer"]})]),
        completion(calls=[("lab__enable_spectrometer", {})]),
        completion("on"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("switch it on"))
    assert response.status_code == 200
    assert upstream.tool_names(2)[-1] == "lab__enable_spectrometer", "loaded tools stay loaded across a refresh"
    await wait_for(lambda: "lab__measure_spectrum" in gateway.mcp.catalog.tools)
    assert gateway.mcp.catalog.version > version
    assert gateway.mcp.health()["lab"]["tools"] == 2

    upstream.script(completion(calls=[("search_tools", {"query": "light spectrum"})]), completion("done"))
    await client.post("/v1/chat/completions", json=chat_body("measure"))
    assert (
        "- lab (2 tools): enable_spectrometer, measure_spectrum"
        in upstream.requests[3]["tools"][0]["function"]["description"]
    )
    assert "lab__measure_spectrum" in upstream.tool_names(4)


async def test_ttl_refresh_picks_up_changes_without_notification(gateway_factory: Any) -> None:
    server = FastMCP("quiet")

    @server.tool
    def first() -> str:
        """The first tool."""
        return "1"

    config = make_config(mcpServers={"quiet": {"command": "unused"}}, tool_sets={}, tool_cache_ttl=0.2)
    _, gateway = await gateway_factory(config, targets={"quiet": server})
    assert list(gateway.mcp.catalog.tools) == ["quiet__first"]

    def second() -> str:
        """The second tool."""
        return "2"

    server.tool(second)  # outside any request: no notification is sent, only the TTL finds it
    await wait_for(lambda: "quiet__second" in gateway.mcp.catalog.tools)
