"""Client tool auto-deferral with a Claude-Code-style request: dozens of client tools (`Bash`, `Read`, `Edit` among
them), system blocks with `cache_control`, sent through the Messages front and the chat front."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx

from app.common import tokens
from tests.support import UPSTREAM, Upstream, completion, make_config
from tests.support.anthropic import CLAUDE_PROVIDER, message, scripted_anthropic, tool_use

KEEP = ["Bash", "Read", "Edit"]
AUTO_DEFER = {"enabled": True, "auto_defer_client_tools": {"min_tokens": 8000, "keep": KEEP}}
MCP_LOADED = [
    "weather__get_current_weather",
    "weather__get_forecast",
    "weather__get_alerts",
    "weather__get_air_quality",
]
JIRA = "mcp__jira__create_issue"


def _tool(name: str, purpose: str) -> dict[str, Any]:
    detail = " ".join(
        f"Step {step}: {purpose} with care, checking inputs and reporting what changed." for step in range(25)
    )
    properties = {
        f"option_{index}": {"type": "string", "description": f"{purpose} option {index}"} for index in range(6)
    }
    return {
        "name": name,
        "description": f"{purpose}. {detail}",
        "input_schema": {"type": "object", "properties": properties},
    }


def claude_code_tools() -> list[dict[str, Any]]:
    """Claude Code's own tools first, then tools of the MCP servers configured in it, as it sends them every turn."""
    own = ["Bash", "Glob", "Grep", "Read", "Edit", "Write", "NotebookEdit", "WebFetch", "TodoWrite", "Task"]
    tools = [_tool(name, f"{name} in the workspace") for name in own]
    for server in ("jira", "github", "slack", "linear", "sentry"):
        for action in ("create_issue", "list_items", "search", "update_item", "delete_item", "comment", "get_item"):
            tools.append(_tool(f"mcp__{server}__{action}", f"{action.replace('_', ' ')} in {server}"))
    return tools


def claude_code_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    system = [
        {"type": "text", "text": "You are Claude Code, an interactive CLI tool."},
        {"type": "text", "text": "Follow the repository's conventions.", "cache_control": {"type": "ephemeral"}},
    ]
    return {
        "model": "fast",
        "max_tokens": 1024,
        "system": system,
        "tools": claude_code_tools(),
        "messages": messages,
        **extra,
    }


def _tokens(definitions: list[dict[str, Any]]) -> int:
    return tokens.count_tools(definitions)


async def test_claude_code_request_defers_client_tools_and_keeps_the_tool_order(
    upstream: Upstream, gateway_factory: Any
) -> None:
    upstream.script(
        completion(calls=[("search_tools", {"tool_names": [JIRA]})]),
        completion(calls=[(JIRA, {"option_0": "Broken build"})]),
        completion("Filed it."),
    )
    client, _ = await gateway_factory(make_config(tool_discovery=AUTO_DEFER))
    asked: list[Any] = [{"role": "user", "content": "File a jira issue: the build is broken"}]
    first = await client.post("/v1/messages", json=claude_code_body(asked), headers={"anthropic-version": "2023-06-01"})
    assert first.status_code == 200, first.text
    reply = anthropic.types.Message.model_validate(first.json())  # a valid Messages response
    assert reply.stop_reason == "tool_use" and reply.content[-1].type == "tool_use"
    call = reply.content[-1]
    assert call.name == JIRA and call.input == {"option_0": "Broken build"}

    sent = upstream.requests[0]
    assert upstream.tool_names(0) == [*KEEP, *MCP_LOADED, "search_tools"]
    assert upstream.tool_names(1) == [*KEEP, *MCP_LOADED, "search_tools", JIRA]
    all_tools = _tokens([{"type": "function", "function": tool} for tool in claude_code_tools()])
    assert _tokens(sent["tools"]) * 5 < all_tools  # far fewer tool tokens on the first call
    assert sent["messages"][0]["role"] == "system" and "Claude Code" in json.dumps(sent["messages"][0])

    asked += [
        {"role": "assistant", "content": [block.model_dump() for block in reply.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "JIRA-7"}]},
    ]
    second = await client.post("/v1/messages", json=claude_code_body(asked))
    assert second.json()["content"] == [{"type": "text", "text": "Filed it."}]
    assert upstream.tool_names(2) == upstream.tool_names(1)  # the next turn starts with the tools as they were


async def test_tool_choice_keeps_its_tool_and_small_requests_are_left_alone(
    upstream: Upstream, gateway_factory: Any
) -> None:
    upstream.script(completion(calls=[("Write", {"option_0": "x"})]), completion("hi"))
    client, _ = await gateway_factory(make_config(tool_discovery=AUTO_DEFER))
    asked = [{"role": "user", "content": "write it"}]
    forced = claude_code_body(asked, tool_choice={"type": "tool", "name": "Write"})
    assert (await client.post("/v1/messages", json=forced)).status_code == 200
    assert upstream.tool_names(0) == ["Bash", "Read", "Edit", "Write", *MCP_LOADED, "search_tools"]
    assert upstream.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "Write"}}
    few = {**claude_code_body(asked), "tools": claude_code_tools()[:3]}
    assert (await client.post("/v1/messages", json=few)).status_code == 200
    assert upstream.tool_names(1) == ["Bash", "Glob", "Grep", *MCP_LOADED, "search_tools"]


async def test_auto_deferral_works_on_the_chat_front_too(upstream: Upstream, gateway_factory: Any) -> None:
    upstream.script(completion("ok"))
    client, _ = await gateway_factory(make_config(tool_discovery=AUTO_DEFER))
    tools = [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]},
        }
        for t in claude_code_tools()
    ]
    body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    assert (await client.post("/v1/chat/completions", json=body)).status_code == 200
    assert upstream.tool_names(0) == [*KEEP, *MCP_LOADED, "search_tools"]


async def test_without_the_setting_every_client_tool_is_sent(upstream: Upstream, gateway_factory: Any) -> None:
    upstream.script(completion("ok"))
    client, _ = await gateway_factory()
    response = await client.post("/v1/messages", json=claude_code_body([{"role": "user", "content": "hi"}]))
    assert response.status_code == 200 and len(upstream.tool_names(0)) == len(claude_code_tools()) + 5


def test_the_setting_is_off_by_default() -> None:
    assert make_config().tool_discovery.auto_defer_client_tools is None
    assert make_config(tool_discovery=AUTO_DEFER).tool_discovery.auto_defer_client_tools.keep == KEEP  # type: ignore[union-attr]


async def test_defer_loading_is_honoured_without_auto_deferral(upstream: Upstream, gateway_factory: Any) -> None:
    upstream.script(completion("ok"))
    client, _ = await gateway_factory()
    tools = claude_code_tools()[:2]
    tools[1] = {**tools[1], "defer_loading": True}
    response = await client.post(
        "/v1/messages", json={**claude_code_body([{"role": "user", "content": "hi"}]), "tools": tools}
    )
    assert response.status_code == 200
    assert upstream.tool_names(0) == ["Bash", *MCP_LOADED, "search_tools"]
    assert "defer_loading" not in json.dumps(upstream.requests[0]["tools"])


async def test_browsers_may_send_anthropic_headers(gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(cors_origins=["https://app.example"]))
    preflight = await client.options(
        "/v1/messages",
        headers={
            "origin": "https://app.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": "x-api-key, anthropic-version, anthropic-beta, content-type",
        },
    )
    assert preflight.status_code == 200
    allowed = preflight.headers["access-control-allow-headers"].lower()
    assert all(name in allowed for name in ("x-api-key", "anthropic-version", "anthropic-beta"))


async def test_anthropic_tool_fields_reach_an_anthropic_upstream_and_stay_off_an_openai_one(
    upstream: Upstream, gateway_factory: Any
) -> None:
    """Claude Code's breakpoint on a tool, and Anthropic's other tool fields, go to Claude exactly as sent and where
    they were sent; `defer_loading` is the gateway's own; an OpenAI-compatible upstream gets plain functions."""
    calls, replies = scripted_anthropic(upstream.router)
    replies += [
        httpx.Response(200, json=message([tool_use("search_tools", {"tool_names": [JIRA]})], "tool_use")),
        httpx.Response(200, json=message([tool_use(JIRA, {"option_0": "Broken build"}, "toolu_2")], "tool_use")),
    ]
    upstream.script(completion("ok"))
    claude = {**CLAUDE_PROVIDER, "deferral": "tools"}  # found tools join `tools`
    providers = {"up": {"base_url": UPSTREAM, "api_key": "sk-test", "max_retries": 0}, "claude": claude}
    models = {"fast": {"provider": "up", "model": "gpt-test"}, "sonnet": {"provider": "claude", "model": "claude-x"}}
    config = make_config(providers=providers, models=models, tool_discovery=AUTO_DEFER)
    client, _ = await gateway_factory(config)
    tools = claude_code_tools()
    by_name = {tool["name"]: tool for tool in tools}
    by_name["Edit"].update(cache_control={"type": "ephemeral"}, eager_input_streaming=True)  # last of those loaded
    by_name[JIRA].update(strict=True, input_examples=[{"option_0": "Flaky test"}], defer_loading=True)
    tools[-1]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}  # on a tool deferred and never found: not sent
    asked = [{"role": "user", "content": "File a jira issue: the build is broken"}]
    reply = await client.post("/v1/messages", json=claude_code_body(asked, model="sonnet", tools=tools))
    assert reply.status_code == 200 and reply.json()["content"][-1]["name"] == JIRA

    first, second = (call["body"]["tools"] for call in calls)
    assert [tool["name"] for tool in first] == [*KEEP, *MCP_LOADED, "search_tools"]
    assert first[: len(KEEP)] == [by_name[name] for name in KEEP]  # as sent, the breakpoint still on Edit
    found = {key: value for key, value in by_name[JIRA].items() if key != "defer_loading"}
    assert second == [*first, found]  # what the first call cached is the second's prefix
    assert sum("cache_control" in tool for tool in second) == 1 and "defer_loading" not in json.dumps(second)

    assert (await client.post("/v1/messages", json=claude_code_body(asked, tools=tools))).status_code == 200
    sent = upstream.requests[0]["tools"]
    assert sent[: len(KEEP)] == [
        {"type": "function", "function": {"name": name, "description": by_name[name]["description"],
                                          "parameters": by_name[name]["input_schema"]}}
        for name in KEEP
    ]  # fmt: skip
    assert all(field not in json.dumps(sent) for field in ("cache_control", "eager_input_streaming", "strict"))
