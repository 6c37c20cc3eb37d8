"""The tool types Codex CLI sends on the Responses front, against a chat-completions upstream: namespaces (their
functions served, deferral per function as OpenAI documents), custom (freeform) tools, `local_shell`, a
client-executed `tool_search`, and hosted tools the upstream cannot run (left out and said so, or refused)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tests.support import Upstream, completion
from tests.support.responses import streamed
from tests.support.upstream import events

SCHEMA = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}
AGENTS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [
        {"type": "function", "name": "close_agent", "description": "Close an agent.", "parameters": SCHEMA},
        {"type": "function", "name": "spawn_agent", "description": "Spawn a sub-agent for a task.",
         "parameters": SCHEMA, "defer_loading": True},
    ],
}  # fmt: skip
GRAMMAR = 'start: "*** Begin Patch" LF hunk+ "*** End Patch"'
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files. This is a FREEFORM tool.",
    "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR},
}
PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"


async def post(client: Any, body: dict[str, Any]) -> Any:
    response = await client.post("/v1/responses", json={"model": "fast", **body})
    assert response.status_code == 200, response.text
    return response.json() if not body.get("stream") else events(response.text)


def upstream_tool(upstream: Upstream, call: int, name: str) -> dict[str, Any]:
    return next(tool["function"] for tool in upstream.requests[call]["tools"] if tool["function"]["name"] == name)


async def test_namespace_functions_are_served_and_deferred_per_function(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"query": "spawn sub-agent"})]),
        completion(calls=[("multi_agent_v1__spawn_agent", {"target": "tests"})]),
    )
    body = await post(client, {"input": "run the tests in a sub-agent", "tools": [AGENTS]})
    first = upstream.tool_names(0)
    assert "multi_agent_v1__close_agent" in first, "a function without defer_loading is loaded"
    assert "multi_agent_v1__spawn_agent" not in first, "defer_loading applies to the function inside"
    manifest = upstream_tool(upstream, 0, "search_tools")["description"]
    assert "multi_agent_v1" in manifest and "Tools for spawning and managing sub-agents." in manifest
    assert "multi_agent_v1__spawn_agent" in upstream.tool_names(1), "found by search"
    call = body["output"][-1]
    assert call["type"] == "function_call" and call["name"] == "spawn_agent"
    assert call["namespace"] == "multi_agent_v1" and json.loads(call["arguments"]) == {"target": "tests"}
    upstream.script(completion("Spawned."))
    passed_back = [
        {"type": "message", "role": "user", "content": "run the tests in a sub-agent"},
        {key: call[key] for key in ("type", "call_id", "name", "namespace", "arguments")},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "agent a-1"},
    ]
    assert (await post(client, {"input": passed_back, "tools": [AGENTS]}))["output"][0]["type"] == "message"
    assert upstream.requests[-1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "multi_agent_v1__spawn_agent"
    assert "multi_agent_v1__spawn_agent" in upstream.tool_names(-1), "what the conversation called stays loaded"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_custom_tool_is_a_one_string_function_upstream(
    upstream: Upstream, gateway_factory: Any, stream: bool
) -> None:
    client, _ = await gateway_factory()
    reply = completion(calls=[("apply_patch", {"input": PATCH})])
    upstream.script(streamed(reply) if stream else reply)
    found = await post(client, {"input": "add a.txt", "tools": [APPLY_PATCH], "stream": stream})
    function = upstream_tool(upstream, 0, "apply_patch")
    assert function["parameters"]["properties"] == {"input": {"type": "string", "description": ANY_TEXT}}
    assert function["parameters"]["required"] == ["input"] and GRAMMAR in function["description"]
    if stream:
        kinds = [event["type"] for event in found]
        start = kinds.index("response.output_item.added")
        assert kinds[start:] == [
            "response.output_item.added",
            "response.custom_tool_call_input.delta",
            "response.custom_tool_call_input.done",
            "response.output_item.done",
            "response.completed",
        ]
        assert found[start]["item"]["type"] == "custom_tool_call" and found[start]["item"]["input"] == ""
        assert found[start + 2]["input"] == PATCH
        output = found[-1]["response"]["output"]
    else:
        output = found["output"]
    call = output[-1]
    assert {key: call[key] for key in ("type", "name", "input", "status")} == {
        "type": "custom_tool_call", "name": "apply_patch", "input": PATCH, "status": "completed",
    }  # fmt: skip
    upstream.script(completion("Added a.txt."))
    passed_back = [
        {"type": "message", "role": "user", "content": "add a.txt"},
        {"type": "custom_tool_call", "call_id": call["call_id"], "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": call["call_id"], "output": "Success. Updated: A a.txt"},
    ]
    assert (await post(client, {"input": passed_back, "tools": [APPLY_PATCH]}))["output"][0]["type"] == "message"
    assistant, result = upstream.requests[-1]["messages"][1:3]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"input": PATCH}
    assert result == {"role": "tool", "content": "Success. Updated: A a.txt", "tool_call_id": call["call_id"]}


class _AnyText(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str)

    __hash__ = str.__hash__


ANY_TEXT = _AnyText()


async def test_local_shell_calls_go_to_the_client_and_come_back(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("local_shell", {"command": ["ls", "-la"], "working_directory": "/tmp"})]))
    body = await post(client, {"input": "list files", "tools": [{"type": "local_shell"}]})
    assert "local_shell" in upstream.tool_names(0)
    call = body["output"][-1]
    assert call["type"] == "local_shell_call" and call["status"] == "completed"
    assert call["action"] == {"type": "exec", "command": ["ls", "-la"], "env": {}, "working_directory": "/tmp"}
    upstream.script(completion("Two files."))
    passed_back = [
        {"type": "message", "role": "user", "content": "list files"},
        {"type": "local_shell_call", "id": call["id"], "call_id": call["call_id"], "action": call["action"],
         "status": "completed"},
        {"type": "local_shell_call_output", "id": call["call_id"], "output": "a\nb"},
    ]  # fmt: skip
    await post(client, {"input": passed_back, "tools": [{"type": "local_shell"}]})
    assert upstream.requests[-1]["messages"][-1] == {"role": "tool", "content": "a\nb", "tool_call_id": call["call_id"]}


async def test_a_client_tool_search_loads_the_tools_it_returns(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    search = {"type": "tool_search", "execution": "client", "description": "Search my deferred tools.",
              "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}  # fmt: skip
    upstream.script(completion(calls=[("tool_search", {"query": "agents"})]))
    body = await post(client, {"input": "start an agent", "tools": [search]})
    call = body["output"][-1]
    assert call["type"] == "tool_search_call" and call["execution"] == "client"
    assert call["arguments"] == {"query": "agents"}
    upstream.script(completion(calls=[("multi_agent_v1__spawn_agent", {"target": "x"})]))
    passed_back = [
        {"type": "message", "role": "user", "content": "start an agent"},
        {key: call[key] for key in ("type", "call_id", "execution", "arguments")},
        {"type": "tool_search_output", "call_id": call["call_id"], "execution": "client", "tools": [AGENTS]},
    ]
    body = await post(client, {"input": passed_back, "tools": [search]})
    assert "multi_agent_v1__spawn_agent" in upstream.tool_names(-1), "the tools it returned are callable"
    loaded = upstream.requests[-1]["messages"][-1]
    assert loaded["role"] == "tool" and "spawn_agent" in loaded["content"]
    assert body["output"][-1]["name"] == "spawn_agent" and body["output"][-1]["namespace"] == "multi_agent_v1"


async def test_hosted_tools_are_left_out_and_said_so(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("No web here."))
    tools = [{"type": "web_search", "external_web_access": True}, {"type": "image_generation"}, APPLY_PATCH]
    with caplog.at_level(logging.INFO, "toolsift"):
        body = await post(client, {"input": "news?", "tools": tools})
    assert body["output"][0]["content"][0]["text"] == "No web here."
    assert body["tool_discovery"]["hosted_tools_dropped"] == ["web_search", "image_generation"]
    assert upstream.tool_names(0)[0] == "apply_patch" and "web_search" not in json.dumps(upstream.requests[0])
    assert any("web_search, image_generation" in record.getMessage() for record in caplog.records)
    assert body["tools"] == tools, "the request's tools are echoed as sent"


async def test_a_namespaces_functions_count_against_the_tool_limit(upstream: Upstream, gateway_factory: Any) -> None:
    client, gateway = await gateway_factory()
    functions = [{"type": "function", "name": f"f{index}"} for index in range(gateway.config.max_client_tools + 1)]
    many = {"type": "namespace", "name": "big", "description": "Many.", "tools": functions}
    response = await client.post("/v1/responses", json={"model": "fast", "input": "x", "tools": [many]})
    assert response.status_code == 400 and response.json()["error"]["param"] == "tools"
    assert upstream.requests == []
