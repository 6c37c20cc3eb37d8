"""Related-tool selection (load_related) and the manifest's loaded tools, on in-memory catalogs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from app.core.catalog import Catalog, ToolEntry, select_mcp_tools
from app.discovery.cache import mcp_groups
from app.discovery.manifest import manifest_text
from app.discovery.related import object_noun, related_tools, with_related
from app.discovery.search import Discovery, run_search
from app.mcp.client.catalog_build import build_catalog, meta_tags
from tests.support import make_config


def _tool(name: str, meta: dict[str, Any] | None = None) -> Any:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    return SimpleNamespace(name=name, description=f"{name} does it", input_schema=schema, meta=meta, title=None)


LISTINGS = {
    "notes": [
        _tool("create_issue"),
        _tool("get_issue"),
        _tool("update_issue"),
        _tool("list_issues"),
        _tool("add_comment", {"fastmcp": {"tags": ["issues"]}}),
        _tool("close_issue", {"fastmcp": {"tags": ["issues"]}}),
        _tool("list_projects", {"category": "Issues"}),
        _tool("delete_project"),
    ],
    "finance": [_tool("get_issue"), _tool("create_issue"), _tool("convert_currency")],
}


def _catalog(**overrides: Any) -> Catalog:
    return build_catalog(make_config(**overrides), LISTINGS, version=1)


def _entries(catalog: Catalog, *names: str) -> list[ToolEntry]:
    return [catalog.tools[name] for name in names]


@pytest.mark.parametrize(
    ("name", "noun"),
    [
        ("create_issue", "issue"),
        ("get_issue", "issue"),
        ("update_issue", "issue"),
        ("list_issues", "issue"),
        ("getIssueComments", "issue comment"),
        ("add_issue_comment", "issue comment"),
        ("get_user_by_id", "user"),
        ("Get All Categories", "category"),
        ("get_issue_details", "issue"),
        ("search_addresses", "address"),
        ("search", None),
        ("", None),
    ],
)
def test_object_noun_is_the_object_a_name_acts_on(name: str, noun: str | None) -> None:
    assert object_noun(name) == noun


def test_tags_come_from_meta_category_tags_and_fastmcp_tags() -> None:
    assert meta_tags({"category": "Issues", "tags": ["a", " B "], "fastmcp": {"tags": ["c"]}}) == (
        "issues",
        "a",
        "b",
        "c",
    )
    assert meta_tags({"tags": "solo", "category": 3}) == ("solo",)
    assert meta_tags(None) == () and meta_tags({"fastmcp": "odd"}) == ()
    assert len(meta_tags({"tags": [f"t{i}" for i in range(100)]})) == 16


def test_siblings_sharing_a_tag_come_before_siblings_sharing_the_noun() -> None:
    catalog = _catalog()
    found = _entries(catalog, "notes__close_issue")
    related = related_tools(found, catalog.tools.values(), 3)
    # close_issue is tagged "issues" with add_comment and list_projects ("Issues" category, lowercased); then the
    # issue nouns in the server's order
    assert [entry.name for entry in related] == ["notes__add_comment", "notes__list_projects", "notes__create_issue"]


def test_noun_grouping_and_the_limit_per_found_tool() -> None:
    catalog = _catalog()
    found = _entries(catalog, "notes__create_issue")
    assert [e.name for e in related_tools(found, catalog.tools.values(), 2)] == [
        "notes__get_issue",
        "notes__update_issue",
    ]
    assert [e.name for e in related_tools(found, catalog.tools.values(), 1)] == ["notes__get_issue"]
    assert related_tools(found, catalog.tools.values(), 0) == []
    everything = related_tools(found, catalog.tools.values(), 25)
    assert [e.name for e in everything] == [
        "notes__get_issue",
        "notes__update_issue",
        "notes__list_issues",
        "notes__close_issue",
    ]


def test_never_another_servers_tool_nor_a_found_loaded_or_repeated_one() -> None:
    catalog = _catalog()
    found = _entries(catalog, "notes__create_issue", "notes__update_issue")
    related = related_tools(found, catalog.tools.values(), 5, is_loaded=lambda name: name == "notes__get_issue")
    names = [entry.name for entry in related]
    # get_issue is loaded, update_issue was found, nothing of finance; each comes once (with create_issue)
    assert names == ["notes__list_issues", "notes__close_issue"]
    assert all(entry.server == "notes" for entry in related)
    finance = related_tools(_entries(catalog, "finance__get_issue"), catalog.tools.values(), 5)
    assert [entry.name for entry in finance] == ["finance__create_issue"]


def test_never_a_tool_outside_the_callers_tool_set() -> None:
    tool_sets = {"narrow": {"servers": {"notes": ["create_issue", "list_issues"]}}}
    config = make_config(tool_sets=tool_sets)
    catalog = build_catalog(config, LISTINGS, version=1)
    allowed = select_mcp_tools(catalog, config, "narrow")
    related = related_tools(_entries(catalog, "notes__create_issue"), allowed, 5)
    assert [entry.name for entry in related] == ["notes__list_issues"]
    discovery = Discovery.build(mcp_groups(catalog, allowed))
    outcome = with_related(
        run_search({"tool_names": ["create_issue"]}, discovery, lambda n: False, 5), discovery, 5, lambda n: False
    )
    assert [entry.name for entry in outcome.related] == ["notes__list_issues"]


def test_client_tools_get_no_related_tools() -> None:
    client = ToolEntry("make_issue", "make_issue", None, "", {}, True)
    other = ToolEntry("get_issue", "get_issue", None, "", {}, True)
    assert related_tools([client], [client, other], 3) == []


def test_the_search_result_names_the_related_tools_it_loaded() -> None:
    catalog = _catalog()
    discovery = Discovery.build(mcp_groups(catalog, [entry for entry in catalog.tools.values() if entry.deferred]))
    outcome = run_search({"tool_names": ["notes__create_issue"]}, discovery, lambda n: False, 5)
    plain = with_related(outcome, discovery, 0, lambda n: False)
    assert plain is outcome and "Also loaded" not in plain.text
    both = with_related(outcome, discovery, 1, lambda n: False)
    assert [entry.name for entry in both.found] == ["notes__create_issue"]
    assert [entry.name for entry in both.related] == ["notes__get_issue"]
    assert "Also loaded with them, related tools of the same server (callable now):" in both.text
    assert "- notes__get_issue: get_issue does it" in both.text


def test_always_load_keeps_named_tools_loaded_and_the_manifest_says_so() -> None:
    servers = {
        "notes": {"command": "unused", "defer_loading": True, "always_load": ["list_projects", "get_issue"]},
        "finance": {"command": "unused", "defer_loading": True},
    }
    catalog = _catalog(mcpServers=servers)
    loaded = [entry.name for entry in catalog.tools.values() if not entry.deferred]
    assert loaded == ["notes__get_issue", "notes__list_projects"]  # finance's get_issue stays deferred
    entries = list(catalog.tools.values())
    groups = mcp_groups(catalog, [e for e in entries if e.deferred], [e for e in entries if not e.deferred])
    text = manifest_text(groups)
    assert (
        "- notes (6 tools): create_issue, update_issue, list_issues, add_comment, close_issue, delete_project; " in text
    )
    assert "loaded already, call directly: notes__get_issue, notes__list_projects" in text
    assert "- finance (3 tools): get_issue, create_issue, convert_currency\n" in text


def test_a_search_naming_an_always_loaded_tool_says_it_is_loaded_instead_of_unknown() -> None:
    servers = {
        "notes": {"command": "unused", "defer_loading": True, "always_load": ["list_projects", "get_issue"]},
        "finance": {"command": "unused", "defer_loading": True},
    }
    catalog = _catalog(mcpServers=servers)
    entries = list(catalog.tools.values())
    groups = mcp_groups(catalog, [e for e in entries if e.deferred], [e for e in entries if not e.deferred])
    discovery = Discovery.build(groups)
    outcome = run_search({"tool_names": ["list_projects", "notes__get_issue", "nope"]}, discovery, lambda n: False, 5)
    assert outcome.found == []
    assert "'list_projects' is always loaded, as notes__list_projects: call it directly." in outcome.text
    assert "'get_issue' is always loaded, as notes__get_issue: call it directly." in outcome.text
    assert "No tool named 'nope'" in outcome.text and "No tool named 'list_projects'" not in outcome.text
    scoped = run_search({"tool_names": ["list_projects"], "server_name": "finance"}, discovery, lambda n: False, 5)
    assert "No tool named 'list_projects' on server 'finance'" in scoped.text
