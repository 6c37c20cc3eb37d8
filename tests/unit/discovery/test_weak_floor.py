"""`weak_match_floor` holds beside keyword matches too: a tool no word of the query matches is offered only when its
meaning is near enough, so a search that found the right tool by its words does not trail unrelated ones (and the
MCP front's lazy mode does not enable them)."""

from __future__ import annotations

from fastmcp import Client, FastMCP

from app.config import parse_config
from app.discovery.embeddings import VectorCache
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.fronts.mcp.server import McpFront
from tests.support.mcp import names, text, wait_for
from tests.unit.discovery.test_fusion import ConceptBackend, ranked

TOOLS = {
    "office": [("make_report", "Write a report.")],
    "shop": [("totals", "Revenue totals.")],  # "revenue" means "sales" to the stand-in model, not to keywords
    "sky": [("forecast", "Weather for tomorrow.")],
    "audio": [("play", "Start song playback.")],
}


def test_tools_matched_by_no_word_must_be_near_in_meaning() -> None:
    assert ranked(TOOLS, "sales report") == ["office__make_report", "shop__totals"]
    every = ranked(TOOLS, "sales report", weak_match_floor=-1.0)
    assert every[:2] == ["office__make_report", "shop__totals"] and len(every) == 4, "the floor is what cut them"


def _server(name: str) -> FastMCP:
    server = FastMCP(name)
    for tool, description in TOOLS[name]:
        server.tool(name=tool, description=description)(lambda: "ok")
    return server


async def test_lazy_mode_enables_only_what_the_search_offers() -> None:
    servers = {name: {"command": "unused", "defer_loading": True} for name in TOOLS}
    config = parse_config({"mcpServers": servers, "mcp_front": {"mode": "lazy"}}, environ={})
    gateway = Gateway(config, {name: _server(name) for name in TOOLS})
    semantic = gateway.semantic
    semantic.backend, semantic.cache, semantic.state = ConceptBackend(), VectorCache(None, "concepts"), "ready"
    await gateway.start()
    try:
        await wait_for(lambda: semantic.status()["mode"] == "hybrid")
        async with Client(McpFront(Engine(gateway), "lazy").server, mode="legacy") as session:
            found = text(await session.call_tool_mcp("search_tools", {"query": "sales report"}))
            enabled = await names(session)
        assert "office__make_report" in found and "shop__totals" in found
        assert "sky__forecast" not in found and "audio__play" not in found, found
        assert {"office__make_report", "shop__totals"} <= set(enabled)
        assert not {"sky__forecast", "audio__play"} & set(enabled)
    finally:
        await gateway.stop()
