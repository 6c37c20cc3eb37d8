"""The Responses codec both ways, for an upstream that speaks the Responses API: an engine request written as a
Responses body reads back (through the Responses front's own parsing) as the same request, and a response the
Responses front renders, plain or streamed, reads back as the same answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.codecs.responses.answers import StreamDecoder, delta_from_response
from app.codecs.responses.items import function_call_item, message_item, reasoning_item, usage_json
from app.codecs.responses.requests import chat_request, request_body
from app.core.model import ChatRequest, Delta, ResponseMeta, StopReason, ToolCall, UpstreamRequest, Usage
from app.engine.events import ClientToolCall, ContentDelta, DiscoveryStats, Finished, ReasoningDelta, RoundStarted
from app.fronts.responses.items import ResponseCall
from app.fronts.responses.stream import ResponsesStream
from app.fronts.responses.wire import parse_responses_request
from tests.support.upstream import events

SCHEMA = {"type": "object", "properties": {"order": {"type": "string"}}}
REQUEST = {
    "model": "m",
    "instructions": "Be exact.",
    "input": [
        {"type": "message", "role": "developer", "content": "Answer in JSON."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
            ],
        },
        {"type": "function_call", "call_id": "call_a", "name": "lookup", "arguments": '{"order":"7"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "5 USD"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 5 USD."}]},
        {"type": "message", "role": "user", "content": "In EUR?"},
    ],
    "tools": [{"type": "function", "name": "lookup", "description": "Find.", "parameters": SCHEMA, "strict": True}],
    "tool_choice": {"type": "function", "name": "lookup"},
    "parallel_tool_calls": False,
    "temperature": 0.3,
    "top_p": 0.9,
    "max_output_tokens": 300,
    "text": {"format": {"type": "json_schema", "name": "answer", "schema": SCHEMA, "strict": True}},
    "reasoning": {"effort": "low"},
    "user": "user-1",
    "stream": True,
}


def engine(body: dict[str, Any]) -> ChatRequest:
    return chat_request(parse_responses_request(json.dumps(body).encode(), 100, 100))


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_reads_back_as_written(stream: bool) -> None:
    request = engine({**REQUEST, "stream": stream})
    tools = [tool.spec for tool in request.tools]
    body = request_body(UpstreamRequest(request.model, request.messages, tools, request.options, request.stream))
    assert body["store"] is False and "instructions" not in body
    again = engine(body)
    assert again.messages == request.messages
    assert again.tools == request.tools
    assert again.options == request.options
    assert again.stream == request.stream == stream


USAGE = Usage(10, 5, 15, cache_read_tokens=2, cache_write_tokens=1, reasoning_tokens=3)
CALL = ToolCall("call_b", "lookup", '{"order": "8"}')


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
        "calls": [tuple(calls[index]) for index in sorted(calls)],
        "finish": [delta.stop.kind for delta in deltas if delta.stop],
        "usage": [delta.usage for delta in deltas if delta.usage is not None],
    }


EXPECTED = {
    "content": "Let me look.",
    "reasoning": "Look it up.",
    "calls": [("call_b", "lookup", '{"order": "8"}')],
    "finish": ["tool_calls"],
    "usage": [USAGE],
}


def test_a_response_reads_back_as_rendered() -> None:
    output = [reasoning_item("Look it up."), message_item("Let me look."), function_call_item(CALL)]
    response = {"id": "resp_1", "object": "response", "created_at": 5, "model": "m-1", "status": "completed"}
    delta = delta_from_response({**response, "output": output, "usage": usage_json(USAGE)})
    assert said([delta]) == EXPECTED
    assert (delta.meta.id, delta.meta.model, delta.meta.created) == ("resp_1", "m-1", 5) if delta.meta else False
    incomplete = {**response, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    stop = delta_from_response({**incomplete, "output": []}).stop
    assert stop == StopReason("max_tokens", None, "responses", "max_output_tokens")


def test_a_stream_reads_back_as_rendered() -> None:
    stream = ResponsesStream(ResponseCall(parse_responses_request(json.dumps(REQUEST).encode(), 100, 100)), "m")
    rendered = [
        RoundStarted(1, ResponseMeta(id="x", model="m-1")),
        ReasoningDelta("Look "),
        ReasoningDelta("it up."),
        ContentDelta("Let "),
        ContentDelta("me look."),
        ClientToolCall(0, CALL),
        Finished(StopReason("tool_calls"), USAGE, DiscoveryStats(1, 0, (), (), (), 0, (), False)),
    ]
    text = "".join(chunk for event in rendered for chunk in stream.render(event))
    decoder = StreamDecoder()
    deltas = [delta for data in events(text) for delta in decoder.deltas(data)]
    assert said(deltas) == EXPECTED
    assert deltas[0].meta is not None and deltas[0].meta.model == "m-1"
