"""Discovery (index, manifest) kept per catalog version and toolset, so requests never rebuild it, and the
manifest groups a catalog's deferred tools make: every front and command that searches MCP tools gets them here.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.core.catalog import Catalog, ToolEntry
from app.discovery.manifest import DEFAULT_MAX_TOKENS, ManifestGroup
from app.discovery.search import Discovery
from app.discovery.semantic import SemanticSearch


class DiscoveryCache:
    """Discovery (index, manifest) per catalog version and toolset, so requests never rebuild it. With
    `everything`, every MCP tool is searchable, loaded ones too: the operator's view (toolsift search, the console),
    which shows the loaded tool that answers a query the model's search finds nothing for."""

    def __init__(
        self,
        manifest_max_tokens: int = DEFAULT_MAX_TOKENS,
        semantic: SemanticSearch | None = None,
        everything: bool = False,
    ) -> None:
        self.manifest_max_tokens = manifest_max_tokens
        self.semantic = semantic
        self.everything = everything
        self._version = -1
        self._by_tool_set: dict[str | None, Discovery | None] = {}

    def get(self, catalog: Catalog, tool_set: str | None, mcp: list[ToolEntry]) -> Discovery | None:
        """The discovery of `tool_set`, whose MCP tools (loaded and deferred) are `mcp`."""
        if catalog.version != self._version:
            self._version, self._by_tool_set = catalog.version, {}
        if tool_set not in self._by_tool_set:
            searchable = [entry for entry in mcp if entry.deferred or self.everything]
            loaded = [entry for entry in mcp if not (entry.deferred or self.everything)]
            self._by_tool_set[tool_set] = (
                Discovery.build(
                    mcp_groups(catalog, searchable, loaded),
                    self.manifest_max_tokens,
                    semantic=self.semantic,
                )
                if searchable
                else None
            )
        return self._by_tool_set[tool_set]


def mcp_groups(catalog: Catalog, deferred: list[ToolEntry], loaded: Iterable[ToolEntry] = ()) -> list[ManifestGroup]:
    """One manifest group per server with deferred tools; its `loaded` tools (always_load, alwaysLoad) are named
    in the group, so the model knows they need no search."""
    by_server: dict[str, list[ToolEntry]] = {}
    for entry in deferred:
        by_server.setdefault(entry.server or "", []).append(entry)
    stay: dict[str, list[ToolEntry]] = {}
    for entry in loaded:
        if entry.server in by_server:
            stay.setdefault(entry.server, []).append(entry)
    return [
        ManifestGroup(name, catalog.servers[name].description, tools, tuple(stay.get(name, ())))
        for name, tools in by_server.items()
    ]
