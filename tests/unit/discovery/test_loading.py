"""always_load and load_related end to end: real fastmcp servers, the chat endpoint against a scripted upstream,
the MCP front and `toolsift tools`."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.fronts.mcp.server import McpFront
from tests.support import Upstream, chat_body, completion, make_config


def tracker() -> FastMCP:
    server = FastMCP("tracker")

    @server.tool
    def list_projects() -> list[str]:
        """List the projects of the tracker."""
        return ["core", "web"]

    @server.tool
    def get_issue(issue_id: str) -> dict[str, str]:
        """Get one issue by id."""
        return {"id": issue_id, "title": "Crash on start"}

    @server.tool
    def create_issue(project: str, title: str) -> dict[str, str]:
        """Create an issue in a project."""
        return {"id": "ISS-9", "project": project, "title": title}

    @server.tool
    def update_issue(issue_id: str, title: str) -> dict[str, str]:
        """Update an issue's title."""
        return {"id": issue_id, "title": title}

    @server.tool
    def archive_project(project: str) -> str:
        """Archive a project."""
        return project

    return server


def tracker_config(always_load: list[str], **discovery: Any) -> Any:
    servers = {"tracker": {"command": "unused", "defer_loading": True, "always_load": always_load}}
    return make_config(mcpServers=servers, tool_sets={}, tool_discovery=discovery)


async def test_always_loaded_tools_are_in_the_first_upstream_call_and_the_rest_is_deferred(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory(tracker_config(["list_projects", "get_issue"]), {"tracker": tracker()})
    upstream.script(completion(calls=[("tracker__get_issue", {"issue_id": "ISS-1"})]), completion("It crashes."))
    response = await client.post("/v1/chat/completions", json=chat_body("What is ISS-1 about?"))
    assert response.status_code == 200, response.text
    first = upstream.requests[0]["tools"]
    assert [tool["function"]["name"] for tool in first] == [
        "tracker__list_projects",
        "tracker__get_issue",
        "search_tools",
    ]
    assert first[1]["function"]["parameters"]["properties"]["issue_id"]["type"] == "string"
    manifest = first[2]["function"]["description"]
    assert "- tracker (3 tools): create_issue, update_issue, archive_project; " in manifest
    assert "loaded already, call directly: tracker__list_projects, tracker__get_issue" in manifest
    tool_result = upstream.requests[1]["messages"][-1]["content"]
    assert "Crash on start" in tool_result  # called without a search
    stats = response.json()["tool_discovery"]
    assert stats["search_calls"] == 0 and stats["deferred_tools"] == 3
    assert stats["loaded_tools"] == ["tracker__list_projects", "tracker__get_issue"]


async def test_an_unknown_always_load_name_is_a_warning_naming_the_servers_tools(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolsift.mcp")
    client, _ = await gateway_factory(tracker_config(["list_projects", "get_isue"]), {"tracker": tracker()})
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == [
        "mcpServers.tracker.always_load: unknown tools get_isue; the server's tools are: archive_project, "
        "create_issue, get_issue, list_projects, update_issue"
    ]
    upstream.script(completion("ok"))
    await client.post("/v1/chat/completions", json=chat_body("hi"))
    assert upstream.tool_names(0) == ["tracker__list_projects", "search_tools"]  # the known name still works


async def test_a_search_loads_the_found_tools_siblings_for_the_next_round(
    upstream: Upstream, gateway_factory: Any
) -> None:
    config = make_config(tool_discovery={"load_related": 1, "max_search_results": 1})
    client, _ = await gateway_factory(config)
    upstream.script(
        completion(calls=[("search_tools", {"query": "create a new note"})]),
        completion(calls=[("notes__create_note", {"title": "Groceries", "body": "milk"})]),
        completion("Saved."),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("Write down: buy milk"))
    assert response.status_code == 200, response.text
    before, after = upstream.tool_names(0), upstream.tool_names(1)
    assert after == [*before, "notes__create_note", "notes__get_note"], "found first, then its sibling, appended"
    search_result = upstream.requests[1]["messages"][-1]["content"]
    assert "- notes__create_note (server: notes)" in search_result
    assert (
        "Also loaded with them, related tools of the same server (callable now):\n- notes__get_note: " in search_result
    )
    stats = response.json()["tool_discovery"]
    assert stats["tools_discovered"] == ["notes__create_note", "notes__get_note"]
    assert upstream.tool_names(2) == after


async def test_the_mcp_front_lists_always_loaded_tools_and_its_search_loads_siblings() -> None:
    config = tracker_config(["list_projects"], load_related=1, max_search_results=1)
    gateway = Gateway(config, {"tracker": tracker()})
    await gateway.start()
    try:
        front = McpFront(Engine(gateway), "lazy")
        async with Client(front.server) as client:
            listed = [tool.name for tool in await client.list_tools()]
            assert listed == ["tracker__list_projects", "search_tools"]
            found = await client.call_tool("search_tools", {"tool_names": ["create_issue"]})
            assert "- tracker__get_issue: Get one issue by id." in str(found.content[0])
            listed = [tool.name for tool in await client.list_tools()]
            assert sorted(listed) == [
                "search_tools",
                "tracker__create_issue",
                "tracker__get_issue",
                "tracker__list_projects",
            ]
    finally:
        await gateway.stop()
