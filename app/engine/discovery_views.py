"""The search a model gets for a tool set, and one over every tool of it: what the console and the inspection
commands show and explain, built as a request's tools are."""

from __future__ import annotations

from app.config import Config
from app.core.catalog import Catalog, select_mcp_tools
from app.core.model import ChatRequest, Options
from app.discovery.cache import DiscoveryCache
from app.discovery.search import Discovery
from app.engine.request_setup import prepare_request_tools


def model_discovery(catalog: Catalog, config: Config, tool_set: str | None, cache: DiscoveryCache) -> Discovery | None:
    """The deferred tools a request with `tool_set` (and no tools of its own) searches: the model's view."""
    request = ChatRequest("-", [], [], Options(), tool_set=tool_set)
    return prepare_request_tools(catalog, config, request, cache).discovery


def every_discovery(catalog: Catalog, config: Config, tool_set: str | None, cache: DiscoveryCache) -> Discovery | None:
    """Every MCP tool of `tool_set`, loaded or deferred, searchable as one (`cache` built with `everything`)."""
    return cache.get(catalog, tool_set, select_mcp_tools(catalog, config, tool_set))
