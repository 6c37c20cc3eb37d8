"""A Responses client behind a Responses upstream loses nothing: the upstream's reasoning items (with their
`encrypted_content` when the client includes it) and hosted calls reach the client as items, plain and streamed,
custom and namespaced tools go up as the client sent them and their calls come back as their own items, and what
the client passes back goes upstream again as it came, without the ids nothing upstream stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.responses import sdk
from tests.support.responses_upstream import (
    codex_gateway,
    custom_call,
    function_call,
    message,
    reasoning,
    response,
    web_search,
)

PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
GRAMMAR = {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /.+/'}
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Edit files.", "format": GRAMMAR}
SCHEMA = {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}
SPAWN = {"type": "function", "name": "spawn", "description": "Spawn one.", "parameters": SCHEMA}
AGENTS = {"type": "namespace", "name": "agents", "description": "Sub-agents.", "tools": [SPAWN]}
WEB = {"type": "web_search"}
INCLUDE = {"include": ["reasoning.encrypted_content"]}


@pytest.fixture
async def gateway(gateway_factory: Any) -> Any:
    async with codex_gateway(gateway_factory) as (client, sent, replies):
        yield client, sent, replies


def patching() -> dict[str, Any]:
    thought = reasoning("Look it up, then patch.", encrypted="enc-A")
    return response(thought, web_search("lark grammar"), message("Patching."), custom_call("apply_patch", PATCH))


async def create(client: Any, **body: Any) -> Any:
    answered = await client.post("/v1/responses", json={"model": "codex", **body})
    assert answered.status_code == 200, answered.text
    return answered.json()


async def test_reasoning_hosted_calls_and_custom_calls_round_trip(gateway: Any) -> None:
    client, sent, replies = gateway
    replies.append(patching())
    tools = [APPLY_PATCH, WEB, AGENTS]
    made = await create(client, input="add a.txt", tools=tools, store=False, reasoning={"summary": "auto"}, **INCLUDE)
    thought, searched, text, call = made["output"]
    assert (thought["type"], searched["type"], text["type"], call["type"]) == (
        "reasoning", "web_search_call", "message", "custom_tool_call",
    )  # fmt: skip
    assert thought["encrypted_content"] == "enc-A", "the upstream's encrypted reasoning, untouched"
    assert thought["summary"] == [{"type": "summary_text", "text": "Look it up, then patch."}]
    assert searched["action"]["query"] == "lark grammar" and searched["id"].startswith("ws_")
    assert call["name"] == "apply_patch" and call["input"] == PATCH
    assert "hosted_tools_dropped" not in made["tool_discovery"], "the upstream runs web_search itself"
    first = sent[0]
    assert first["tools"] == [APPLY_PATCH, AGENTS, WEB], "tools go up as the client sent them, hosted ones last"
    assert first["include"] == ["reasoning.encrypted_content"] and first["reasoning"] == {"summary": "auto"}

    replies.append(response(message("Added a.txt.")))
    back = [{"role": "user", "content": "add a.txt"}, *made["output"]]
    back.append({"type": "custom_tool_call_output", "call_id": call["call_id"], "output": "Done!"})
    again = await create(client, input=back, tools=tools, store=False, **INCLUDE)
    assert again["output"][0]["content"][0]["text"] == "Added a.txt."
    assert sent[1]["input"] == [
        {"type": "message", "role": "user", "content": "add a.txt"},
        {"type": "reasoning", "summary": thought["summary"], "encrypted_content": "enc-A"},
        {"type": "web_search_call", "status": "completed", "action": searched["action"]},
        {
            "type": "message",
            "role": "assistant",
            # The client's parts as it passed them back (as the gateway rendered them, with their logprobs).
            "content": [{"type": "output_text", "text": "Patching.", "annotations": [], "logprobs": []}],
        },
        {"type": "custom_tool_call", "call_id": call["call_id"], "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": call["call_id"], "output": "Done!"},
    ]


async def test_encrypted_reasoning_only_when_included_and_namespaced_calls_come_back(gateway: Any) -> None:
    client, sent, replies = gateway
    replies.append(response(reasoning("Spawn.", encrypted="enc-B"), function_call("spawn", {"task": "t"}, "agents")))
    made = await create(client, input="spawn one", tools=[AGENTS])
    thought, call = made["output"]
    assert "encrypted_content" not in thought and thought["summary"][0]["text"] == "Spawn."
    assert (call["type"], call["name"], call["namespace"]) == ("function_call", "spawn", "agents")
    assert "include" not in sent[0], "nothing reasons yet, so nothing is asked for"


async def test_a_stream_shows_the_summary_and_ends_with_the_items_as_they_came(gateway: Any) -> None:
    client, sent, replies = gateway
    replies.append(patching())
    api = sdk(client)
    async with api.responses.stream(model="codex", input="add a.txt", tools=[APPLY_PATCH, WEB], **INCLUDE) as stream:  # type: ignore[arg-type]
        seen = [event async for event in stream]
        final = await stream.get_final_response()
    kinds = [event.type for event in seen]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    summary = [event for event in seen if event.type == "response.reasoning_summary_text.delta"]
    assert "".join(event.delta for event in summary) == "Look it up, then patch."
    done = [event.item for event in seen if event.type == "response.output_item.done"]
    assert [item.type for item in done] == ["reasoning", "web_search_call", "message", "custom_tool_call"]
    assert done[0].id == summary[0].item_id and done[0].encrypted_content == "enc-A"  # type: ignore[union-attr]
    assert [item.type for item in final.output] == [item.type for item in done]
    assert final.output[3].input == PATCH  # type: ignore[union-attr]
    assert sent[0]["stream"] is True and sent[0]["store"] is False


async def test_a_continuation_carries_the_upstreams_reasoning_the_client_did_not_include(gateway: Any) -> None:
    client, sent, replies = gateway
    replies.append(response(reasoning("Spawn.", encrypted="enc-C"), function_call("spawn", {"task": "t"}, "agents")))
    made = await create(client, input="spawn one", tools=[AGENTS])
    assert "encrypted_content" not in made["output"][0], "not shown: the client did not include it"
    replies.append(response(message("Spawned.")))
    output = {"type": "function_call_output", "call_id": made["output"][1]["call_id"], "output": "ok"}
    await create(client, input=[output], tools=[AGENTS], previous_response_id=made["id"])
    assert [item["type"] for item in sent[1]["input"]] == ["message", "reasoning", "function_call",
                                                           "function_call_output"]  # fmt: skip
    assert sent[1]["input"][1]["encrypted_content"] == "enc-C", "the stored conversation keeps it, as OpenAI's does"
    stored = (await client.get(f"/v1/responses/{made['id']}")).json()
    assert "encrypted_content" not in stored["output"][0]
