"""The tool catalog: every MCP tool under its exposed name, toolset filtering and the loaded/deferred split.

A `Catalog` is an immutable snapshot of what the MCP servers list; a refresh makes a new one with a higher
version, so a running request keeps the snapshot it started with. `RequestTools` is one request's view:
toolset-filtered MCP tools plus the client's own tools, split into loaded and deferred.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from app.common.errors import RequestRefused
from app.config import AutoDeferConfig, Config, ExcludeSpec, ServerSelection
from app.core.deferral import Deferral
from app.core.model import ClientTool, Native, ToolChoice, ToolSpec

SEARCH_TOOL_NAME = "search_tools"
MAX_NAME_LENGTH = 64
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One tool as the model sees it. `server` is None for tools the client sent."""

    name: str
    original_name: str
    server: str | None
    description: str
    parameters: dict[str, Any]
    deferred: bool
    search_hint: str = ""
    tags: tuple[str, ...] = ()  # the server's own grouping (`_meta` category / tags, fastmcp tags), lowercased
    destructive: bool = False  # the server annotated it `destructiveHint: true`
    definition: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    tokens: int = field(default=0, compare=False)  # rough size of `definition` as sent, for metrics
    native: Native | None = field(default=None, compare=False, repr=False)  # a client tool in its own wire format
    strict: bool | None = field(default=None, compare=False, repr=False)  # a client tool asked for exact arguments
    client_spec: ToolSpec | None = field(default=None, compare=False, repr=False)  # a client tool's, as it came
    spec: ToolSpec = field(init=False, compare=False, repr=False)  # the definition as the engine sends it upstream

    def __post_init__(self) -> None:
        # Made once: every round of every request sends each loaded tool's spec.
        spec = self.client_spec or ToolSpec(self.name, self.description, self.parameters, self.strict, self.native)
        object.__setattr__(self, "spec", spec)

    @property
    def source(self) -> Literal["mcp", "client"]:
        return "client" if self.server is None else "mcp"


def estimate_tokens(definition: dict[str, Any]) -> int:
    """Four characters a token: cheap enough for every tool, close enough for a metric."""
    return len(json.dumps(definition, separators=(",", ":"))) // 4


@dataclass(frozen=True, slots=True)
class ServerTools:
    """What one MCP server contributed to a catalog."""

    name: str
    description: str
    deferred: bool
    tools: tuple[ToolEntry, ...]


@dataclass(frozen=True)
class Catalog:
    version: int
    servers: Mapping[str, ServerTools]
    tools: Mapping[str, ToolEntry]
    deferral: Deferral  # which servers are deferred, and why


def exposed_name(server: str, tool: str, taken: set[str]) -> str:
    """`{server}__{tool}`, sanitised to OpenAI's function-name rule and unique within `taken`."""
    candidate = _INVALID_NAME_CHARS.sub("_", f"{server}__{tool}")
    if len(candidate) <= MAX_NAME_LENGTH and candidate not in taken:
        return candidate
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()
    for length in (8, 12, 40):
        name = f"{candidate[: MAX_NAME_LENGTH - length - 1]}_{digest[:length]}"
        if name not in taken:
            return name
    raise ValueError(f"cannot make a unique name for {server}/{tool}")  # pragma: no cover - sha1 collision


def openai_definition(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


# What a request may see: None (every tool), one tool set's name, or several names whose tool sets it may see only
# the common tools of (an identity's own tool set and the one its request named).
ToolScope = str | tuple[str, ...] | None


def narrowed(own: str | None, asked: str | None) -> ToolScope:
    """The scope of a caller whose own tool set is `own` asking for `asked`: a request narrows, never widens."""
    if own is None or asked is None or own == asked:
        return asked if asked is not None else own
    return (own, asked)


def scope_label(scope: ToolScope) -> str:
    """The scope as one text (a key part, a log field)."""
    return "&".join(scope) if isinstance(scope, tuple) else scope or ""


def select_mcp_tools(catalog: Catalog, config: Config, tool_set: ToolScope) -> list[ToolEntry]:
    """The MCP tools a request may see: all of them, or those its toolset allows (with several, those all of
    them allow)."""
    if tool_set is None:
        return list(catalog.tools.values())
    if isinstance(tool_set, tuple):
        common = [{entry.name for entry in select_mcp_tools(catalog, config, name)} for name in tool_set[1:]]
        return [
            entry
            for entry in select_mcp_tools(catalog, config, tool_set[0])
            if all(entry.name in names for names in common)
        ]
    spec = config.tool_sets.get(tool_set)
    if spec is None:
        raise unknown_tool_set(tool_set, config)
    selected: list[ToolEntry] = []
    for server_name, selection in spec.servers.items():
        server = catalog.servers.get(server_name)
        if server is None:  # down or not yet listed: nothing to offer, nothing to validate
            continue
        selected.extend(_apply_selection(server, selection, tool_set))
    return selected


def unknown_tool_set(name: ToolScope, config: Config) -> RequestRefused:
    available = ", ".join(sorted(config.tool_sets)) or "none are configured"
    return RequestRefused(
        f"Unknown tool_set {name!r}. Available tool sets: {available}.", param="tool_set", code="unknown_tool_set"
    )


def _apply_selection(server: ServerTools, selection: ServerSelection, tool_set: str) -> list[ToolEntry]:
    if selection is True:
        return list(server.tools)
    if selection is False:
        return []
    names = selection.exclude if isinstance(selection, ExcludeSpec) else selection
    known = {entry.original_name for entry in server.tools}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise RequestRefused(
            f"tool_set {tool_set!r} names unknown tools of server {server.name!r}: {', '.join(unknown)}. "
            f"Its tools are: {', '.join(sorted(known))}.",
            param="tool_set",
            code="unknown_tool",
        )
    if isinstance(selection, ExcludeSpec):
        return [entry for entry in server.tools if entry.original_name not in names]
    wanted = set(names)
    return [entry for entry in server.tools if entry.original_name in wanted]


def client_entries(tools: list[ClientTool], reserved: Mapping[str, ToolEntry]) -> list[ToolEntry]:
    """The client's tools as entries; a name that collides with a tool in `reserved` (the MCP tools the caller
    may see, never the whole catalog: a refusal must not tell a caller of tools outside its set) is refused."""
    entries: list[ToolEntry] = []
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        name = tool.spec.name
        if name in reserved or name == SEARCH_TOOL_NAME:
            raise RequestRefused(
                f"Client tool {name!r} collides with a tool this gateway offers this request; rename it.",
                param=f"tools[{index}].function.name",
                code="tool_name_collision",
            )
        if name in seen:
            raise RequestRefused(f"Duplicate client tool name {name!r}.", param=f"tools[{index}].function.name")
        seen.add(name)
        native = tool.spec.native
        if native is not None and native.format == "openai":
            definition = native.value
        else:
            definition = openai_definition(name, tool.spec.description, tool.spec.parameters)
            if tool.spec.strict is not None:
                definition["function"]["strict"] = tool.spec.strict
        entries.append(
            ToolEntry(
                name=name,
                original_name=name,
                server=None,
                description=tool.spec.description,
                parameters=tool.spec.parameters,
                deferred=tool.deferred,
                definition=definition,
                tokens=estimate_tokens(definition),
                native=tool.spec.native,
                strict=tool.spec.strict,
                client_spec=tool.spec,
            )
        )
    return entries


def auto_deferred(entries: list[ToolEntry], config: AutoDeferConfig | None, tool_choice: object) -> list[ToolEntry]:
    """The client's tools with `auto_defer_client_tools` applied: when those not already deferred add up to more
    than `min_tokens`, all of them are deferred but the `keep` names and the tool `tool_choice` names (an upstream
    refuses a forced tool it was not sent). Decided from the request alone, so every turn of a conversation gets
    the same split and the same tool order; tools its history called are loaded back by the caller, after
    `search_tools`, where they were when the model first called them."""
    loaded = [entry for entry in entries if not entry.deferred]
    if config is None or sum(entry.tokens for entry in loaded) <= config.min_tokens:
        return entries
    keep = {*config.keep, *_chosen_tool(tool_choice)}
    return [entry if entry.deferred or entry.name in keep else replace(entry, deferred=True) for entry in entries]


def _chosen_tool(tool_choice: object) -> list[str]:
    """The name a tool choice forces."""
    return [tool_choice.name] if isinstance(tool_choice, ToolChoice) and tool_choice.mode == "tool" else []
