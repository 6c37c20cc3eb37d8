"""A catalog made from MCP servers' `tools/list` results: each tool named `{server}__{tool}`, cleaned, tagged,
marked destructive or deferred as its server and the config say.

The MCP client's part, since it reads MCP's tool objects and their metadata (fastmcp's tags among them); the
catalog it makes is the core's vocabulary every layer reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fastmcp.utilities.components import get_fastmcp_metadata

from app.config import Config, McpServerConfig
from app.core.catalog import (
    SEARCH_TOOL_NAME,
    Catalog,
    ServerTools,
    ToolEntry,
    estimate_tokens,
    exposed_name,
    openai_definition,
)
from app.core.deferral import decide_deferral

ALWAYS_LOAD_META = "anthropic/alwaysLoad"
SEARCH_HINT_META = "anthropic/searchHint"
MAX_TAGS = 16  # per tool: a server's meta is anyone's, the related-tool grouping reads only this many


def build_catalog(config: Config, listings: Mapping[str, Iterable[Any]], version: int) -> Catalog:
    """Make a snapshot from each server's `tools/list` result (mcp Tool objects), in config order."""
    taken: set[str] = {SEARCH_TOOL_NAME}
    drafts: dict[str, list[_Draft]] = {}
    for server_name in config.mcp_servers:
        if server_name not in listings:
            continue
        drafts[server_name] = []
        for tool in listings[server_name]:
            name = exposed_name(server_name, tool.name, taken)
            taken.add(name)
            description = (tool.description or getattr(tool, "title", None) or "").strip()
            parameters = _clean_schema(tool.input_schema)
            definition = openai_definition(name, description, parameters)
            drafts[server_name].append(_Draft(tool, name, description, parameters, definition))
    deferral = decide_deferral(config, {name: [d.definition for d in rows] for name, rows in drafts.items()})
    servers: dict[str, ServerTools] = {}
    tools: dict[str, ToolEntry] = {}
    for server_name, rows in drafts.items():
        server_deferred = deferral.servers[server_name].deferred
        hints = config.tool_hints.get(server_name, {})
        always = set(config.mcp_servers[server_name].always_load)
        entries: list[ToolEntry] = []
        for draft in rows:
            meta = getattr(draft.tool, "meta", None) or {}
            entry = ToolEntry(
                name=draft.name,
                original_name=draft.tool.name,
                server=server_name,
                description=draft.description,
                parameters=draft.parameters,
                deferred=server_deferred and meta.get(ALWAYS_LOAD_META) is not True and draft.tool.name not in always,
                search_hint=" ".join(
                    filter(None, [str(meta.get(SEARCH_HINT_META) or ""), hints.get(draft.tool.name, "")])
                ),
                tags=meta_tags(meta),
                destructive=_destructive(draft.tool),
                definition=draft.definition,
                tokens=estimate_tokens(draft.definition),
            )
            entries.append(entry)
            tools[draft.name] = entry
        summary = config.mcp_servers[server_name].description or _summarise(entries)
        servers[server_name] = ServerTools(server_name, summary, server_deferred, tuple(entries))
    return Catalog(version=version, servers=servers, tools=tools, deferral=deferral)


@dataclass(frozen=True, slots=True)
class _Draft:
    """A listed tool named and cleaned, before its deferral is known (that depends on every server's tools)."""

    tool: Any
    name: str
    description: str
    parameters: dict[str, Any]
    definition: dict[str, Any]


def _destructive(tool: Any) -> bool:
    """Only an explicit `destructiveHint: true` counts: tools without annotations run, as everywhere else."""
    annotations = getattr(tool, "annotations", None)
    # The SDK's current name first: its older alias still answers, with a deprecation warning on every read.
    name = "destructive_hint" if hasattr(annotations, "destructive_hint") else "destructiveHint"
    return getattr(annotations, name, None) is True


def meta_tags(meta: Any) -> tuple[str, ...]:
    """A tool's groups as its server states them: `_meta` `category` and `tags`, and fastmcp's tags."""
    if not isinstance(meta, dict):
        return ()
    raw: list[Any] = [meta.get("category"), meta.get("tags"), get_fastmcp_metadata(meta).get("tags")]
    found: list[str] = []
    for value in raw:
        for tag in value if isinstance(value, list | tuple) else [value]:
            if isinstance(tag, str) and tag.strip() and len(found) < MAX_TAGS:
                found.append(tag.strip().lower()[:64])
    return tuple(dict.fromkeys(found))


def unknown_always_load(server: McpServerConfig, tool_names: Iterable[str]) -> list[str]:
    """The `always_load` names this server does not list (a typo would otherwise silently defer the tool)."""
    listed = set(tool_names)
    return [name for name in server.always_load if name not in listed]


def _clean_schema(schema: Any) -> dict[str, Any]:
    """An object schema as OpenAI accepts it (some servers omit `properties` or `type`)."""
    result = dict(schema) if isinstance(schema, dict) else {}
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result


def _summarise(entries: list[ToolEntry]) -> str:
    """A one-line summary from the first sentences of the server's tool descriptions."""
    firsts = [entry.description.split("\n")[0].split(". ")[0].rstrip(".") for entry in entries if entry.description]
    text = "; ".join(firsts[:3])
    return text if len(text) <= 100 else text[:97].rstrip() + "..."
