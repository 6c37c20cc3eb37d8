"""What the console and the inspection commands show: tools with their status and the manifest (an explained
search is the engine's: app/engine/explained_search.py).

One source for both: the admin API answers these reports as JSON from the running gateway, and `toolsift tools`,
`manifest` and `search` print them, fetched from a running gateway or computed after starting the servers.
"""

from __future__ import annotations

from typing import Any

from app.common import tokens
from app.common.errors import RequestRefused
from app.config import Config
from app.core.catalog import Catalog, select_mcp_tools
from app.discovery.search import Discovery


def tool_rows(
    catalog: Catalog, config: Config, tool_set: str | None, server: str | None = None
) -> list[dict[str, Any]]:
    """Every MCP tool of `tool_set` (all without one), of `server` if given, with its status; RequestRefused for
    an unknown tool set or server."""
    check_server(config, server)
    return [
        {
            "name": entry.name,
            "server": entry.server,
            "original_name": entry.original_name,
            "status": "deferred" if entry.deferred else "loaded",
            "description": entry.description,
            "tokens": entry.tokens,
        }
        for entry in select_mcp_tools(catalog, config, tool_set)
        if server is None or entry.server == server
    ]


def check_server(config: Config, server: str | None) -> None:
    """RequestRefused naming the configured servers when `server` is none of them."""
    if server is not None and server not in config.mcp_servers:
        servers = ", ".join(config.mcp_servers) or "(none)"
        raise RequestRefused(f"unknown server {server!r}; servers: {servers}", param="server")


def manifest_report(discovery: Discovery | None) -> dict[str, Any]:
    """The `search_tools` definition exactly as the model gets it, and its size."""
    if discovery is None:
        return {"deferred": False, "definition": None, "description": None, "tokens": 0, "exact_tokens": tokens.exact()}
    definition = discovery.definition
    return {
        "deferred": True,
        "definition": definition,
        "description": definition["function"]["description"],
        "tokens": tokens.count_tools([definition]),
        "exact_tokens": tokens.exact(),
        "deferred_tools": len(discovery.by_name),
        "deferred_tool_tokens": discovery.tokens,
    }
