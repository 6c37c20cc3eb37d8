"""`toolsift serve` with a Responses upstream (`"type": "openai_responses"`) over real HTTP: a scripted upstream
served by uvicorn streams OpenAI's documented event sequence, the official OpenAI SDK is the client. A chat client
runs a deferred MCP tool (a real stdio server) server-side, plain and streamed; a Responses client gets the
upstream's encrypted reasoning, a custom tool's call and a hosted web search, and passes them back."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support import SERVERS, free_port, served_gateway
from tests.support.responses_upstream import (
    ScriptedResponses,
    custom_call,
    function_call,
    message,
    reasoning,
    response,
    web_search,
)

NOTE = {"title": "groceries", "body": "milk"}
PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Edit files with a patch."}
INCLUDE = ["reasoning.encrypted_content"]


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedResponses]:
    server = ScriptedResponses().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def api(scripted: ScriptedResponses, tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    config = {
        "providers": {
            "resp": {
                "type": "openai_responses",
                "base_url": scripted.base_url,
                "api_key": "sk-up",
                "max_retries": 0,
                "deferral": "tools",
            }
        },
        "models": {"r": {"provider": "resp", "model": "gpt-5", "params": {"reasoning_effort": "low"}}},
        "mcpServers": {
            "notes": {"command": sys.executable, "args": [str(SERVERS / "notes.py")], "defer_loading": True}
        },
        "tool_discovery": {"enabled": True, "semantic": {"enabled": False}},
    }
    path = Path(tmp_path_factory.mktemp("responses-upstream")) / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)


def note_rounds() -> list[dict[str, Any]]:
    return [
        response(reasoning("Find a notes tool.", encrypted="enc-1"),
                 function_call("search_tools", {"query": "create a note"})),
        response(reasoning("Save it.", encrypted="enc-2"), function_call("notes__create_note", NOTE)),
        response(reasoning("Done.", encrypted="enc-3"), message("Saved the note.")),
    ]  # fmt: skip


def check_note_loop(scripted: ScriptedResponses) -> None:
    """What went upstream: the whole conversation every round, the reasoning of earlier rounds as it came."""
    assert len(scripted.requests) == 3 and all(body["store"] is False for body in scripted.requests)
    last = scripted.requests[2]["input"]
    assert [item["type"] for item in last] == [
        "message", "reasoning", "function_call", "function_call_output", "reasoning", "function_call",
        "function_call_output",
    ]  # fmt: skip
    assert [item.get("encrypted_content") for item in last if item["type"] == "reasoning"] == ["enc-1", "enc-2"]
    assert "groceries" in last[-1]["output"], "the note was made by the real MCP server"
    assert last[-1]["call_id"] == last[-2]["call_id"]


def test_a_chat_client_runs_an_mcp_tool_through_a_responses_upstream(scripted: ScriptedResponses, api: Any) -> None:
    scripted.script(*note_rounds())
    answer = api.chat.completions.create(model="r", messages=[{"role": "user", "content": "note: milk"}])
    assert answer.choices[0].message.content == "Saved the note." and answer.choices[0].finish_reason == "stop"
    assert answer.usage.prompt_tokens == 30 and answer.model_extra["tool_discovery"]["tools_called"] == [
        "notes__create_note"
    ]
    check_note_loop(scripted)


def test_a_streamed_chat_runs_an_mcp_tool_through_a_responses_upstream(scripted: ScriptedResponses, api: Any) -> None:
    scripted.script(*note_rounds())
    chunks = list(api.chat.completions.create(model="r", messages=[{"role": "user", "content": "note: milk"}],
                                              stream=True, stream_options={"include_usage": True}))  # fmt: skip
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "Saved the note." and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 15
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert all(body["stream"] is True for body in scripted.requests)
    check_note_loop(scripted)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_responses_client_keeps_reasoning_custom_calls_and_web_search(
    scripted: ScriptedResponses, api: Any, stream: bool
) -> None:
    thought = reasoning("Search, then patch.", encrypted="gAAAA-opaque")
    scripted.script(
        response(thought, web_search("lark patch grammar"), message("Patching."), custom_call("apply_patch", PATCH)),
        response(reasoning("Check.", encrypted="gAAAA-second"), message("Added a.txt.")),
    )
    tools: Any = [APPLY_PATCH, {"type": "web_search"}]
    asked: Any = {"model": "r", "input": "add a.txt", "tools": tools, "include": INCLUDE, "store": False}
    if stream:
        with api.responses.stream(**asked) as events:
            kinds = [event.type for event in events]
            made = events.get_final_response()
        assert "response.reasoning_summary_text.delta" in kinds and kinds[-1] == "response.completed"
    else:
        made = api.responses.create(**asked)
    assert [item.type for item in made.output] == ["reasoning", "web_search_call", "message", "custom_tool_call"]
    assert made.output[0].encrypted_content == "gAAAA-opaque"
    assert made.output[1].action.query == "lark patch grammar"
    call = made.output[3]
    assert (call.name, call.input) == ("apply_patch", PATCH)
    sent = scripted.requests[0]
    assert sent["tools"][0] == APPLY_PATCH and sent["tools"][-1] == {"type": "web_search"}, (
        "a custom tool as sent (not as a function), web_search passed on"
    )
    assert sent["include"] == INCLUDE and sent["store"] is False

    back = [{"role": "user", "content": "add a.txt"}, *(item.model_dump(exclude_none=True) for item in made.output)]
    back.append({"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Done!"})
    again = api.responses.create(model="r", input=back, tools=tools, include=INCLUDE, store=False)
    assert again.output_text == "Added a.txt."
    second = scripted.requests[1]["input"]
    assert [item["type"] for item in second] == [
        "message", "reasoning", "web_search_call", "message", "custom_tool_call", "custom_tool_call_output",
    ]  # fmt: skip
    assert second[1]["encrypted_content"] == "gAAAA-opaque" and "id" not in second[1]
    assert second[4]["input"] == PATCH and second[5]["output"] == "Done!"
