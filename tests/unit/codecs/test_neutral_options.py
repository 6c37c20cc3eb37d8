"""The engine's options and tools in no wire format's names: each codec maps its own onto them and back, losslessly
for an upstream of the same format, and pass-through parameters never reach an upstream of another format."""

from __future__ import annotations

from typing import Any

import pytest

from app.codecs.anthropic.requests import request_body as anthropic_body
from app.codecs.openai_chat.options import options_of, write_options
from app.codecs.openai_chat.requests import to_openai, tool_to_openai
from app.codecs.responses.requests import request_body as responses_body
from app.core.model import (
    Message,
    Options,
    Reasoning,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
    UpstreamRequest,
    with_defaults,
)

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def _round(options: Options, stream: bool = False, tools: list[ToolSpec] | None = None) -> UpstreamRequest:
    return UpstreamRequest("m", [Message("user", "hi")], tools or [], options, stream)


@pytest.mark.parametrize(
    "params",
    [
        {"max_completion_tokens": 50},
        {"max_tokens": 300, "max_completion_tokens": 200},
        {"tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}},
        {"tool_choice": {"type": "function", "function": {"name": "f"}}, "parallel_tool_calls": False},
        {"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": SCHEMA, "strict": True}}},
        {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
        {"response_format": {"type": "text"}, "stop": "END", "temperature": 1, "top_p": 0.5, "user": "u"},
        {"reasoning_effort": "low", "seed": 7, "x_vendor_option": {"keep": True}, "temperature": "hot"},
    ],
)
def test_chat_parameters_come_back_as_sent(params: dict[str, Any]) -> None:
    options = options_of(params)
    body = {**options.params.get("openai", {})}
    write_options(body, options, stream=False)
    assert body == params


def test_null_tool_choice_parallel_calls_and_stop_are_not_sent() -> None:
    options = options_of({"tool_choice": None, "parallel_tool_calls": None, "stop": None, "temperature": None})
    assert options.params == {"openai": {"temperature": None}}


def test_typed_chat_parameters() -> None:
    options = options_of(
        {
            "max_completion_tokens": 50,
            "max_tokens": 60,
            "tool_choice": "required",
            "reasoning_effort": "high",
            "response_format": {"type": "json_object"},
            "x": 1,
        }
    )
    assert options.max_tokens == 50  # the one OpenAI reads first
    assert options.tool_choice == ToolChoice("required")
    assert options.reasoning == Reasoning(effort="high")
    assert options.response_format == ResponseFormat("json_object")
    assert options.params == {"openai": {"max_completion_tokens": 50, "max_tokens": 60, "x": 1}}


def test_pass_through_reaches_only_its_own_format() -> None:
    options = options_of({"temperature": 0.3, "seed": 7, "x_vendor_option": {"keep": True}, "max_tokens": 9})
    body = anthropic_body(_round(options), default_max_tokens=1024)
    assert body["temperature"] == 0.3 and body["max_tokens"] == 9
    assert "seed" not in body and "x_vendor_option" not in body
    sent = to_openai(_round(options))
    assert sent["seed"] == 7 and sent["x_vendor_option"] == {"keep": True}


def test_alias_defaults_fill_what_the_request_leaves_unset() -> None:
    defaults = options_of({"temperature": 0.1, "max_tokens": 100, "seed": 3})
    requested = Options(max_tokens=300, include_usage=True, params={"anthropic": {"top_k": 5}})
    merged = with_defaults(requested, defaults)
    assert (merged.temperature, merged.max_tokens) == (0.1, 300)
    assert anthropic_body(_round(merged), default_max_tokens=1024)["temperature"] == 0.1
    sent = to_openai(_round(merged, stream=True))
    assert (sent["max_tokens"], sent["seed"], sent["stream_options"]) == (300, 3, {"include_usage": True})
    assert "top_k" not in sent
    assert with_defaults(requested, None) is requested


def test_anthropic_thinking_budget_and_tool_choice() -> None:
    options = Options(
        reasoning=Reasoning(budget_tokens=200), tool_choice=ToolChoice("tool", "f"), parallel_tool_calls=False
    )
    tool = ToolSpec("f", "", SCHEMA)
    body = anthropic_body(_round(options, tools=[tool]), default_max_tokens=1024)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 200}
    assert body["tool_choice"] == {"type": "tool", "name": "f", "disable_parallel_tool_use": True}
    assert "reasoning_effort" not in to_openai(_round(options))


def test_responses_body_from_typed_options() -> None:
    options = Options(
        max_tokens=40,
        tool_choice=ToolChoice("tool", "f"),
        response_format=ResponseFormat("json_schema", "n", SCHEMA, strict=True),
        reasoning=Reasoning(effort="low"),
    )
    body = responses_body(_round(options, tools=[ToolSpec("f", "d", SCHEMA, strict=True)]))
    assert body["max_output_tokens"] == 40
    assert body["tool_choice"] == {"type": "function", "name": "f"}
    assert body["text"] == {"format": {"type": "json_schema", "name": "n", "schema": SCHEMA, "strict": True}}
    assert body["reasoning"] == {"effort": "low"}
    assert body["tools"][0]["strict"] is True


def test_a_tool_chat_form_is_made_once() -> None:
    tool = ToolSpec("f", "d", SCHEMA, strict=True)
    first = tool_to_openai(tool)
    function = {"name": "f", "description": "d", "parameters": SCHEMA, "strict": True}
    assert first == {"type": "function", "function": function}
    assert tool_to_openai(tool) is first
