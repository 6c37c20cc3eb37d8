"""Checks that span sections: a model's provider, a fallback alias, the enriching model, a tool set's or hint's
server, an identity's tool set, `"*"` origins.

They read plain decoded JSON, so they run on a document whose other sections are still wrong: every problem of a
config is reported in one pass, a misspelt provider beside a misspelt key, never one after the other is fixed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.config.identities import secret_names

OPEN_CORS = (
    'cors_origins: "*" lets every web page a user opens call this gateway, and without auth.api_keys any page could '
    "use its models and tools with nothing to stop it: set auth.api_keys, or list the origins that may call it"
)


def reference_problems(doc: dict[str, Any]) -> list[str]:
    """One line per reference that names nothing; parts that are not the right JSON type are skipped (the schema
    check reports those)."""
    providers, models, servers = _keys(doc.get("providers")), _section(doc.get("models")), _keys(doc.get("mcpServers"))
    problems: list[str] = []
    default = doc.get("default_provider")
    if isinstance(default, str) and default not in providers:
        problems.append(f"default_provider: {default!r} is not one of providers {_names(providers)}")
    for alias, model in models.items():
        if not isinstance(model, dict):
            continue
        fallbacks = model.get("fallbacks")
        for fallback in fallbacks if isinstance(fallbacks, list) else []:
            if fallback not in models or fallback == alias:
                problems.append(f"models.{alias}.fallbacks: {fallback!r} is not another model alias")
        provider = model.get("provider")
        if isinstance(provider, str) and provider not in providers:
            problems.append(f"models.{alias}.provider: {provider!r} is not one of providers {_names(providers)}")
    enrich = _section(_section(doc.get("tool_discovery")).get("enrich"))
    if isinstance(enrich.get("model"), str) and enrich["model"] not in models and not default:
        problems.append(f"tool_discovery.enrich.model: {enrich['model']!r} is not one of models {_names(models)}")
    for set_name, tool_set in _section(doc.get("tool_sets")).items():
        selected = tool_set.get("servers") if isinstance(tool_set, dict) else None
        for server in _keys(selected):
            if server not in servers:
                problems.append(
                    f"tool_sets.{set_name}.servers: unknown server {server!r}; servers are {_names(servers)}"
                )
    for server in _keys(doc.get("tool_hints")):
        if server not in servers:
            problems.append(f"tool_hints: unknown server {server!r}; servers are {_names(servers)}")
    origins, auth = doc.get("cors_origins"), _section(doc.get("auth"))
    keys = auth.get("api_keys")
    for index, entry in enumerate(keys if isinstance(keys, list) else []):
        tool_set = entry.get("tool_set") if isinstance(entry, dict) else None
        if isinstance(tool_set, str) and tool_set not in _section(doc.get("tool_sets")):
            problems.append(
                f"auth.api_keys[{index}].tool_set: unknown tool set {tool_set!r}; tool sets are "
                f"{_names(_keys(doc.get('tool_sets')))}"
            )
    problems.extend(_identity_server_problems(doc, keys if isinstance(keys, list) else []))
    if isinstance(origins, list) and "*" in origins and not auth.get("api_keys"):
        problems.append(OPEN_CORS)
    return problems


def _identity_server_problems(doc: dict[str, Any], keys: list[Any]) -> list[str]:
    """A server whose headers or env use `${identity.NAME}` lists its tools as one identity: `list_as`, or the
    first that has every secret it references; there must be one."""
    identities = {entry.get("name"): entry for entry in keys if isinstance(entry, dict)}
    problems: list[str] = []
    for name, server in _section(doc.get("mcpServers")).items():
        if not isinstance(server, dict):
            continue
        values = [*_section(server.get("headers")).values(), *_section(server.get("env")).values()]
        needed = {secret for value in values if isinstance(value, str) for secret in secret_names(value)}
        list_as = server.get("list_as")
        if isinstance(list_as, str) and list_as not in identities:
            problems.append(f"mcpServers.{name}.list_as: {list_as!r} is not a named identity of auth.api_keys")
        elif (
            needed
            and list_as is None
            and not any(needed <= set(_section(entry.get("secrets"))) for entry in identities.values())
        ):
            problems.append(
                f"mcpServers.{name}: no identity in auth.api_keys has every secret it references "
                f"({', '.join(sorted(needed))}), so none can list its tools: add them, or set list_as"
            )
    return problems


def _section(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _keys(value: Any) -> list[str]:
    return list(value) if isinstance(value, dict) else []


def _names(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "(none)"
