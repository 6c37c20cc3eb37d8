"""Which MCP servers hide their tools behind `search_tools`: decided once per catalog, for every front.

An explicit `defer_loading` always wins; the other servers follow `tool_discovery.defer`. Under "auto" a pasted
`mcpServers` block (no `defer_loading` keys) gets discovery exactly when it pays: when those servers' tools would
cost more than `auto_defer_min_tokens` in every first call, they are all deferred. The decision is taken on the
whole catalog (not per request or toolset), so the chat front, the MCP front and the CLI agree, and again at every
rebuild, since a server that connects late or lists new tools can tip the balance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from app import tokens
from app.config import Config


@dataclass(frozen=True, slots=True)
class ServerDeferral:
    deferred: bool
    reason: str  # what decided it, as `toolsift check` shows it


@dataclass(frozen=True, slots=True)
class Deferral:
    mode: str  # tool_discovery.defer
    threshold: int
    servers: Mapping[str, ServerDeferral]
    auto_tokens: Mapping[str, int] = field(default_factory=dict)  # per listed server that "auto" decides

    @property
    def auto_total(self) -> int:
        return sum(self.auto_tokens.values())


def decide_deferral(config: Config, definitions: Mapping[str, list[dict[str, Any]]]) -> Deferral:
    """Every configured server's deferral, from the OpenAI tool definitions of the servers listed so far."""
    discovery = config.tool_discovery
    threshold = discovery.auto_defer_min_tokens
    if not discovery.enabled:
        off = ServerDeferral(False, "tool_discovery.enabled is false")
        return Deferral(discovery.defer, threshold, {name: off for name in config.mcp_servers})
    undecided = [name for name, server in config.mcp_servers.items() if server.defer_loading is None]
    auto_tokens = (
        {name: _tokens(definitions[name]) for name in undecided if name in definitions}
        if discovery.defer == "auto"
        else {}
    )
    total = sum(auto_tokens.values())
    servers: dict[str, ServerDeferral] = {}
    for name, server in config.mcp_servers.items():
        if server.defer_loading is not None:
            servers[name] = ServerDeferral(server.defer_loading, f"defer_loading: {str(server.defer_loading).lower()}")
        elif discovery.defer != "auto":
            servers[name] = ServerDeferral(discovery.defer == "all", f'tool_discovery.defer: "{discovery.defer}"')
        else:
            own = f"{auto_tokens[name]:,} tokens" if name in auto_tokens else "not listed yet"
            sign = ">" if total > threshold else "<="
            reason = f"auto: {total:,} tokens of tools without defer_loading {sign} {threshold:,} (this server: {own})"
            servers[name] = ServerDeferral(total > threshold, reason)
    return Deferral(discovery.defer, threshold, servers, auto_tokens)


def _tokens(definitions: list[dict[str, Any]]) -> int:
    return _count(json.dumps(definitions, ensure_ascii=False, separators=(",", ":"))) if definitions else 0


@lru_cache(maxsize=256)
def _count(text: str) -> int:
    """A server's tools are counted again only when they change: every rebuild decides afresh, and tokenising
    thousands of tools on the event loop at each one would stall it."""
    return tokens.count_text(text)
