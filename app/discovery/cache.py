"""Discovery (index, manifest) kept per catalog version and toolset, so requests never rebuild it, and the
manifest groups a catalog's deferred tools make: every front and command that searches MCP tools gets them here.

A request's own deferred tools are indexed once per distinct tool list (clients such as Claude Code send the same
list every turn) and kept in a cache bounded in bytes. Both caches may be filled from a worker thread.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections import ChainMap, OrderedDict
from collections.abc import Callable, Iterable, Sequence

from app.core.catalog import Catalog, ToolEntry, ToolScope
from app.core.model import Native
from app.discovery.enrichment import Enrichments
from app.discovery.index import CLIENT_INDEX_CHARS, CLIENT_STEM_BUDGET, stem_budget
from app.discovery.manifest import DEFAULT_MAX_TOKENS, ManifestGroup
from app.discovery.search import Discovery
from app.discovery.semantic import SemanticSearch

CLIENT_CACHE_BYTES = 64 * 1024 * 1024
VERSIONS_KEPT = 2  # the catalog requests use and the one being prepared beside it


class DiscoveryCache:
    """Discovery (index, manifest) per catalog version and toolset, so requests never rebuild it. With
    `everything`, every MCP tool is searchable, loaded ones too: the operator's view (toolsift search, the console),
    which shows the loaded tool that answers a query the model's search finds nothing for."""

    def __init__(
        self,
        manifest_max_tokens: int = DEFAULT_MAX_TOKENS,
        semantic: SemanticSearch | None = None,
        everything: bool = False,
        client_cache_bytes: int = CLIENT_CACHE_BYTES,
        enrichments: Enrichments | None = None,
    ) -> None:
        """`enrichments`: what the configured model wrote of the tools (`toolsift enrich`), indexed with them."""
        self.manifest_max_tokens = manifest_max_tokens
        self.semantic = semantic
        self.everything = everything
        self.enrichments = enrichments
        self._lock = threading.Lock()
        self._versions: dict[int, dict[ToolScope, Discovery | None]] = {}
        self.clients = ClientDiscoveries(client_cache_bytes)

    def ready(self, catalog: Catalog, tool_set: ToolScope) -> bool:
        """Whether `get` would answer from the cache, without building."""
        with self._lock:
            return tool_set in self._versions.get(catalog.version, {})

    def get(self, catalog: Catalog, tool_set: ToolScope, mcp: list[ToolEntry]) -> Discovery | None:
        """The discovery of `tool_set`, whose MCP tools (loaded and deferred) are `mcp`."""
        with self._lock:
            built = self._versions.get(catalog.version, {})
            if tool_set in built:
                return built[tool_set]
        discovery = self._build(catalog, mcp)
        with self._lock:
            built = self._versions.setdefault(catalog.version, {})
            discovery = built.setdefault(tool_set, discovery)
            for old in sorted(self._versions)[:-VERSIONS_KEPT]:
                del self._versions[old]
        return discovery

    def rebuild(self, catalog: Catalog, select: Callable[[ToolScope], list[ToolEntry]]) -> None:
        """Build again every tool set's discovery of `catalog` built so far (blocking: the worker pool), for the
        enrichments added since; requests keep the discovery they have and get the new one next time.
        `select(tool_set)` is the tool set's MCP tools."""
        with self._lock:
            tool_sets = list(self._versions.get(catalog.version, {}))
        for tool_set in tool_sets:
            discovery = self._build(catalog, select(tool_set))
            with self._lock:
                if tool_set in self._versions.get(catalog.version, {}):
                    self._versions[catalog.version][tool_set] = discovery

    def _build(self, catalog: Catalog, mcp: list[ToolEntry]) -> Discovery | None:
        searchable = [entry for entry in mcp if entry.deferred or self.everything]
        if not searchable:
            return None
        loaded = [entry for entry in mcp if not (entry.deferred or self.everything)]
        groups = mcp_groups(catalog, searchable, loaded)
        return Discovery.build(groups, self.manifest_max_tokens, semantic=self.semantic, enrichments=self.enrichments)

    def with_client_tools(
        self, catalog: Catalog, tool_set: ToolScope, base: Discovery | None, group: ManifestGroup
    ) -> Discovery:
        """`base` plus a request's deferred tools, indexed once per distinct list of them."""
        # The base's index stands for its build: a rebuild for enrichments makes a new one (the cached discovery
        # holds the index it was made over, so its id names no other while the entry lives).
        base_id = id(base.index) if base is not None else 0
        key = (catalog.version, base_id, tool_set, group.label, group.summary, _digest(group.tools))
        found = self.clients.get(key)
        if found is None:
            with stem_budget(CLIENT_STEM_BUDGET):
                found = (
                    base.with_group(group, CLIENT_INDEX_CHARS)
                    if base
                    else Discovery.build([group], semantic=self.semantic, max_chars=CLIENT_INDEX_CHARS)
                )
            self.clients.put(key, found, client_bytes(group.tools, found))
        return found


def _digest(entries: Sequence[ToolEntry]) -> bytes:
    """What identifies a list of client tools: everything of theirs a discovery shows or searches. Hashed a tool at
    a time: one `json.dumps` of megabytes would hold the interpreter lock, and so the event loop, throughout."""
    digest = hashlib.sha256()
    for entry in entries:
        content = [entry.name, entry.description, entry.parameters, entry.definition, entry.tokens]
        if entry.native is not None:
            content += [entry.native.format, entry.native.value]
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.digest()


def client_bytes(entries: Sequence[ToolEntry], discovery: Discovery) -> int:
    """What an indexed list of client tools holds, in the bytes Python uses (`sys.getsizeof`), not characters (a
    Cyrillic character takes 2 bytes, one outside the first plane 4): its definitions and texts (each object once),
    a margin per tool for the entry and the wire forms made when it is sent, its index (under 4 KB per distinct
    word: postings, IDF, the server document's postings) and its own layer of the discovery's tables. Counting
    only the list once missed tables copied from the shared discovery: a list of 2 small tools beside 10,000 MCP
    tools counted 0.1 MB and held 1.2 MB."""
    seen: set[int] = set()
    texts = json_bytes(
        [
            value
            for entry in entries
            for value in (entry.name, entry.description, entry.parameters, entry.definition, entry.native)
        ],
        seen,
    )
    words = discovery.index.parts[-1].word_count  # the client tools are the last part
    return texts + 4096 * words + 1024 * len(entries) + _own_tables(discovery, seen)


def json_bytes(values: Iterable[object], seen: set[int]) -> int:
    """The bytes of JSON-like values (dicts, lists, texts, numbers; a client tool's wire form), each object counted
    once across calls that share `seen`; other objects count their own size, not what they refer to."""
    total = 0
    stack = list(values)
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        total += sys.getsizeof(value)
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
        elif isinstance(value, Native):
            stack.append(value.value)
    return total


def _own_tables(discovery: Discovery, seen: set[int]) -> int:
    """The tables and texts `discovery` made for itself: beside a shared discovery, its own layer of each table
    (the shared one's are not its own); the entries in them are counted with their own lists."""
    total = sys.getsizeof(discovery.groups)
    for table in (discovery.by_name, discovery.by_original_name, discovery.by_group):
        own = table.maps[:-1] if isinstance(table, ChainMap) else [table]
        total += sum(sys.getsizeof(layer) for layer in own)
        if table is discovery.by_original_name:
            total += sum(sys.getsizeof(found) for layer in own for found in layer.values())
    return total + json_bytes([discovery.manifest, discovery.definition], seen)


Key = tuple[int, int, ToolScope, str, str, bytes]


class ClientDiscoveries:
    """Least recently used client-tool discoveries within `max_bytes`; one larger than a quarter of it is not kept."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, tuple[Discovery, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Key) -> Discovery | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: Key, discovery: Discovery, size: int) -> None:
        if size > self.max_bytes // 4:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = (discovery, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.bytes -= dropped


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
