"""A tool without a description is still findable: its parameters stand in for the description, and its vector
is read from its name, its server's name and its parameters rather than from two or three name words."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from app.config import parse_config
from app.core.catalog import Catalog, ToolEntry
from app.discovery.cache import mcp_groups
from app.discovery.search import Discovery, rank_tools
from app.discovery.semantic import tool_text
from app.engine.explained_search import matched_fields
from app.mcp.client.catalog_build import build_catalog


def _tool(name: str, description: str, **parameters: str) -> Any:
    schema = {"type": "object", "properties": {key: {"type": "string", "description": text}
                                               for key, text in parameters.items()}}  # fmt: skip
    return SimpleNamespace(name=name, description=description, input_schema=schema, meta=None, title=None)


LISTINGS = {
    "Parcel API": [
        _tool("GetStatus", "", tracking_number="The parcel's tracking number, as printed on the label"),
        _tool("ListCarriers", "", page="Page of results"),
    ],
    "helpers": [
        _tool("echo", "Echo any text back, such as a tracking number or a parcel label, unchanged.", text="Text"),
        _tool("ping", "Check that the service answers.", host="Host name"),
    ],
}


def _catalog() -> Catalog:
    config = parse_config({"mcpServers": {s: {"command": "x", "defer_loading": True} for s in LISTINGS}}, environ={})
    return build_catalog(config, LISTINGS, version=1)


def _entries() -> dict[str, ToolEntry]:
    return dict(_catalog().tools)


def test_a_tool_without_a_description_is_found_by_what_its_parameters_say() -> None:
    catalog = _catalog()
    entries = dict(catalog.tools)
    discovery = Discovery.build(mcp_groups(catalog, list(entries.values())))
    found = [entry.name for entry in rank_tools(discovery, "parcel tracking number", None, 2)]
    assert found[0] == "Parcel_API__GetStatus", found
    matched = matched_fields(entries["Parcel_API__GetStatus"], "parcel tracking number")
    assert "description" not in matched and matched["parameters"] == ["parcel", "tracking", "number"]


def test_the_vector_of_a_tool_without_a_description_reads_its_server_and_parameters() -> None:
    entries = _entries()
    status = tool_text(entries["Parcel_API__GetStatus"])
    label = "The parcel's tracking number, as printed on the label"
    assert status == f"get status: parcel api; takes tracking number ({label})"
    assert tool_text(entries["helpers__echo"]).startswith("echo: Echo any text back")
