"""The Responses codec for an upstream that speaks Responses, both ways: the engine's round as a request body
(calls by their tool's type, namespaces regrouped, the upstream's own items before their turn, without ids), and
the upstream's `response`, plain or streamed in OpenAI's documented sequence, as the same deltas."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from app.codecs.responses.answers import StreamDecoder, delta_from_response, failure
from app.codecs.responses.requests import chat_request, request_body, with_reasoning_kept
from app.core.model import Delta, Message, Native, StopReason, ToolCall, UpstreamRequest
from app.fronts.responses.wire import parse_responses_request
from tests.support.responses_upstream import (
    custom_call,
    failed_events,
    function_call,
    message,
    reasoning,
    response,
    stream_events,
    web_search,
)

SCHEMA = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}
AGENTS = {
    "type": "namespace",
    "name": "agents",
    "description": "Sub-agents.",
    "tools": [
        {"type": "function", "name": "spawn", "description": "Spawn one.", "parameters": SCHEMA},
        {"type": "function", "name": "close", "description": "Close one.", "parameters": SCHEMA},
    ],
}
PATCH_TOOL = {"type": "custom", "name": "apply_patch", "description": "Edit files.",
              "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}  # fmt: skip
WEB = {"type": "web_search", "search_context_size": "low"}
SEALED = "gAAAA-upstream-encrypted"  # an upstream's encrypted_content, passed on untouched


def parsed(body: dict[str, Any]) -> Any:
    return chat_request(parse_responses_request(json.dumps({"model": "m", **body}).encode(), 100, 100))


def round_of(body: dict[str, Any], **extra: Any) -> UpstreamRequest:
    request = parsed(body)
    tools = [tool.spec for tool in request.tools]
    return UpstreamRequest(request.model, request.messages, tools, request.options, request.stream, **extra)


def test_a_responses_conversation_goes_upstream_as_items_of_their_own_types_without_ids() -> None:
    thought = {"id": "rs_gw1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Patch it."}],
               "encrypted_content": SEALED, "status": "completed"}  # fmt: skip
    searched = {"id": "ws_gw2", "type": "web_search_call", "status": "completed", "action": {"type": "search"}}
    body = {
        "instructions": "Be exact.",
        "input": [
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "content": "fix it"},
            thought,
            searched,
            {"type": "custom_tool_call", "id": "ctc_gw3", "call_id": "c1", "name": "apply_patch", "input": "*** x"},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"},
            {"type": "reasoning", "id": "rs_gw4", "summary": [{"type": "summary_text", "text": "Text only."}]},
            {"type": "function_call", "call_id": "c2", "name": "spawn", "namespace": "agents", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "spawned"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
        ],
        "tools": [AGENTS, PATCH_TOOL, WEB],
        "tool_choice": {"type": "custom", "name": "apply_patch"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "k1",
    }
    request = parsed(body)
    hosted = request.hosted_tools
    sent = request_body(round_of(body, hosted_tools=hosted))
    summary = thought["summary"]
    assert sent["input"] == [
        {"type": "message", "role": "system", "content": "Be exact."},
        {"type": "message", "role": "system", "content": "Use tools."},
        {"type": "message", "role": "user", "content": "fix it"},
        {"type": "reasoning", "summary": summary, "encrypted_content": SEALED, "status": "completed"},
        {"type": "web_search_call", "status": "completed", "action": {"type": "search"}},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** x"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"},
        {"type": "function_call", "call_id": "c2", "name": "spawn", "arguments": "{}", "namespace": "agents"},
        {"type": "function_call_output", "call_id": "c2", "output": "spawned"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
    ], "reasoning without encrypted_content cannot be read back unstored, and is left out"
    assert sent["tools"] == [AGENTS, PATCH_TOOL, WEB], "a namespace regrouped, a custom tool as sent, hosted kept"
    assert sent["tool_choice"] == {"type": "custom", "name": "apply_patch"}
    assert sent["store"] is False and sent["include"] == ["reasoning.encrypted_content"]
    assert sent["prompt_cache_key"] == "k1"


def test_engine_turns_go_back_with_the_upstreams_own_items_and_reasoning_is_asked_for() -> None:
    item = {"id": "rs_up", "type": "reasoning", "summary": [], "encrypted_content": SEALED, "content": []}
    own = Native("responses", {"items": [item]})
    call = ToolCall("call_1", "search_tools", '{"query": "currency"}')
    messages = [
        Message("user", "5 USD in EUR?"),
        Message("assistant", None, [call], reasoning="Search first.", extra=own),
        Message("tool", "Found: finance__convert_currency", tool_call_id="call_1"),
    ]
    request = parsed({"input": "x"})
    sent = with_reasoning_kept(request_body(UpstreamRequest("m", messages, [], request.options)))
    assert sent["input"][1:3] == [
        {"type": "reasoning", "summary": [], "encrypted_content": SEALED},
        {"type": "function_call", "call_id": "call_1", "name": "search_tools", "arguments": '{"query": "currency"}'},
    ]
    assert sent["include"] == ["reasoning.encrypted_content"], "a conversation that reasons gets its reasoning back"
    assert "include" not in with_reasoning_kept(request_body(UpstreamRequest("m", messages[:1], [], request.options)))
    effort = parsed({"input": "x", "reasoning": {"effort": "low", "summary": "auto"}})
    asked = with_reasoning_kept(request_body(UpstreamRequest("m", messages[:1], [], effort.options)))
    assert asked["reasoning"] == {"effort": "low", "summary": "auto"}
    assert asked["include"] == ["reasoning.encrypted_content"]


THOUGHT = reasoning("Look it up.", "Then answer.", encrypted=SEALED)
SEARCH = web_search("weather in Paris")
CALLED = function_call("spawn", {"target": "tests"}, namespace="agents")
PATCHED = custom_call("apply_patch", "*** Begin Patch\n*** End Patch")
ANSWER = response(THOUGHT, SEARCH, message("Sunny. "), CALLED, PATCHED, usage=(30, 7))


def said(deltas: list[Delta]) -> dict[str, Any]:
    calls: dict[int, list[str]] = {}
    for delta in deltas:
        for fragment in delta.calls:
            call = calls.setdefault(fragment.index, ["", "", ""])
            call[0] = fragment.id or call[0]
            call[1] += fragment.name
            call[2] += fragment.arguments
    return {
        "content": "".join(delta.content for delta in deltas),
        "reasoning": "".join(delta.reasoning for delta in deltas),
        "summary": any(delta.reasoning_summary for delta in deltas),
        "calls": [tuple(calls[index]) for index in sorted(calls)],
        "blocks": [block.value for delta in deltas for block in delta.reasoning_blocks],
        "hosted": [call.value for delta in deltas for call in delta.hosted_calls],
        "extra": [delta.extra.value for delta in deltas if delta.extra is not None],
        "finish": [delta.stop.kind for delta in deltas if delta.stop],
        "usage": [(delta.usage.input_tokens, delta.usage.output_tokens) for delta in deltas if delta.usage],
    }


EXPECTED = {
    "content": "Sunny. ",
    "reasoning": "Look it up.\n\nThen answer.",
    "summary": True,
    "calls": [
        (CALLED["call_id"], "agents__spawn", '{"target": "tests"}'),
        (PATCHED["call_id"], "apply_patch", json.dumps({"input": PATCHED["input"]})),
    ],
    "blocks": [THOUGHT],
    "hosted": [SEARCH],
    "extra": [{"items": [THOUGHT, SEARCH], "parts": ANSWER["output"][2]["content"]}],  # its message's parts too
    "finish": ["tool_calls"],
    "usage": [(30, 7)],
}


def test_a_response_reads_as_the_engines_deltas() -> None:
    delta = delta_from_response(ANSWER)
    assert said([delta]) == EXPECTED
    assert delta.meta is not None and (delta.meta.id, delta.meta.model) == (ANSWER["id"], "gpt-5-upstream")
    short = response(message("Cut"), incomplete="max_output_tokens")
    assert delta_from_response(short).stop == StopReason("max_tokens", None, "responses", "max_output_tokens")


def test_the_scripted_stream_is_openais_and_reads_as_the_same_deltas() -> None:
    streamed = stream_events(ANSWER)
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    for event in streamed:  # every event as the official SDK types it, required fields and all
        assert adapter.validate_python(event).type == event["type"]
    assert [event["sequence_number"] for event in streamed] == list(range(len(streamed)))
    decoder = StreamDecoder()
    deltas = [delta for event in streamed for delta in decoder.deltas(event)]
    assert said(deltas) == EXPECTED and decoder.finished
    assert deltas[0].meta is not None and deltas[0].meta.id == ANSWER["id"]


@pytest.mark.parametrize("index", [1, 2])
def test_a_failed_stream_says_why(index: int) -> None:
    events = failed_events("rate_limit_exceeded", "Slow down.")
    assert failure(events[index]) == {"message": "Slow down.", "code": "rate_limit_exceeded"} | (
        {"param": None} if index == 1 else {}
    )
    assert failure(events[0]) is None


def test_a_clients_shell_and_tool_search_go_up_as_their_own_items() -> None:
    found = {"type": "function", "name": "deploy", "description": "Deploy.", "parameters": SCHEMA}
    body = {
        "input": [
            {"role": "user", "content": "deploy"},
            {"type": "tool_search_call", "call_id": "s1", "execution": "client", "arguments": {"query": "deploy"}},
            {"type": "tool_search_output", "call_id": "s1", "execution": "client", "tools": [found]},
            {
                "type": "local_shell_call",
                "id": "lsh_1",
                "call_id": "l1",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"], "env": {}},
            },
            {"type": "local_shell_call_output", "id": "l1", "output": "a.txt"},
        ],
        "tools": [{"type": "tool_search", "execution": "client"}, {"type": "local_shell"}],
    }
    sent = request_body(round_of(body))
    assert sent["input"][1:] == [
        {"type": "tool_search_call", "call_id": "s1", "execution": "client", "arguments": {"query": "deploy"}},
        {"type": "tool_search_output", "call_id": "s1", "execution": "client", "tools": [found]},
        {
            "type": "local_shell_call",
            "call_id": "l1",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        {"type": "function_call_output", "call_id": "l1", "output": "a.txt"},
    ]
    assert sent["tools"] == [{"type": "tool_search", "execution": "client"}, {"type": "local_shell"}], (
        "a tool the search loaded is read from its output, not repeated"
    )
    shell = {"id": "lsh_2", "type": "local_shell_call", "call_id": "l2", "status": "completed",
             "action": {"type": "exec", "command": ["pwd"], "env": {}}}  # fmt: skip
    search = {"id": "tsc_1", "type": "tool_search_call", "call_id": "s2", "execution": "client", "status": "completed",
              "arguments": {"query": "logs"}}  # fmt: skip
    calls = said([delta_from_response(response(shell, search))])["calls"]
    assert calls == [
        ("l2", "local_shell", '{"command": ["pwd"], "env": {}}'),
        ("s2", "tool_search", '{"query": "logs"}'),
    ]
