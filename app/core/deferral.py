"""Which MCP servers hide their tools behind `search_tools`: decided once per catalog, for every front.

An explicit `defer_loading` always wins; the other servers follow `tool_discovery.defer`. Under "auto" a pasted
`mcpServers` block (no `defer_loading` keys) gets discovery exactly when it pays: when those servers' tools would
cost more than `auto_defer_min_tokens` in every first call, they are all deferred. The decision is taken on the
whole catalog (not per request or toolset), so the chat front, the MCP front and the CLI agree, and again at every
rebuild, since a server that connects late or lists new tools can tip the balance.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.common import tokens
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
    estimated: frozenset[str] = frozenset()  # servers whose tools were too large to count exactly

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
    texts = (
        {name: _text(definitions[name]) for name in undecided if name in definitions}
        if discovery.defer == "auto"
        else {}
    )
    auto_tokens = {name: _tokens(text) for name, text in texts.items()}
    estimated = frozenset(name for name, text in texts.items() if len(text) > MAX_COUNTED_CHARS)
    total = sum(auto_tokens.values())
    servers: dict[str, ServerDeferral] = {}
    for name, server in config.mcp_servers.items():
        if server.defer_loading is not None:
            servers[name] = ServerDeferral(server.defer_loading, f"defer_loading: {str(server.defer_loading).lower()}")
        elif discovery.defer != "auto":
            servers[name] = ServerDeferral(discovery.defer == "all", f'tool_discovery.defer: "{discovery.defer}"')
        else:
            own = f"{auto_tokens[name]:,} tokens" if name in auto_tokens else "not listed yet"
            own = f"about {own}, estimated" if name in estimated else own
            sign = ">" if total > threshold else "<="
            reason = f"auto: {total:,} tokens of tools without defer_loading {sign} {threshold:,} (this server: {own})"
            servers[name] = ServerDeferral(total > threshold, reason)
    return Deferral(discovery.defer, threshold, servers, auto_tokens, estimated)


# Past this many characters of definitions a server's tokens are estimated (four characters a token): exact
# counting is pure Python, and a server listing thousands of tools is far past any threshold anyway.
MAX_COUNTED_CHARS = 256 * 1024
_COUNTS_KEPT = 256
_counts: dict[bytes, int] = {}  # digest of a server's definitions -> tokens: 256 small keys, not 256 listings
_counts_lock = threading.Lock()  # catalogs are built in a worker thread


def _text(definitions: list[dict[str, Any]]) -> str:
    """The definitions as sent (compact JSON), encoded a tool at a time: one `json.dumps` of thousands of tools
    holds the interpreter lock, and so the event loop, for as long as it runs."""
    if not definitions:
        return ""
    return "[" + ",".join(json.dumps(item, ensure_ascii=False, separators=(",", ":")) for item in definitions) + "]"


def _tokens(text: str) -> int:
    if not text:
        return 0
    return (len(text) + 3) // 4 if len(text) > MAX_COUNTED_CHARS else _count(text)


def _count(text: str) -> int:
    """A server's tools are counted again only when they change: every rebuild decides afresh."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    with _counts_lock:
        found = _counts.get(key)
    if found is None:
        found = tokens.count_text(text)
        with _counts_lock:
            if len(_counts) >= _COUNTS_KEPT:
                _counts.pop(next(iter(_counts)))
            _counts[key] = found
    return found
