"""The demo model on its own, without a gateway: what it reads from a conversation and what it answers over HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.demo.model import LABEL, respond
from app.demo.server import create_model_app

CONVERT = {
    "type": "function",
    "function": {
        "name": "money__convert",
        "description": "Convert an amount between two currencies.",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "number", "minimum": 0, "description": "Amount of money."},
                "source": {"type": "string", "description": "Currency code to convert from."},
                "target": {"type": "string", "description": "Currency code to convert to."},
            },
            "required": ["amount", "source", "target"],
        },
    },
}
SEARCH = {"type": "function", "function": {"name": "search_tools", "description": "Search tools: money convert.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}  # fmt: skip


def _call(reply: Any) -> tuple[str, dict[str, Any]]:
    (call,) = reply.tool_calls
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def test_searches_with_the_message_words_then_calls_the_found_tool_then_answers_with_its_result() -> None:
    user = {"role": "user", "content": "Please convert 12.5 GBP into JPY"}
    name, arguments = _call(respond({"messages": [user], "tools": [SEARCH]}))
    assert (name, arguments) == ("search_tools", {"query": "convert gbp jpy"})
    search_call = respond({"messages": [user], "tools": [SEARCH]}).tool_calls[0]
    conversation = [
        user,
        {"role": "assistant", "content": None, "tool_calls": [search_call]},
        {"role": "tool", "tool_call_id": search_call["id"], "content": "Found 1 tool:\n\n- money__convert (server: m)"},
    ]
    name, arguments = _call(respond({"messages": conversation, "tools": [SEARCH, CONVERT]}))
    assert (name, arguments) == ("money__convert", {"amount": 12.5, "source": "GBP", "target": "JPY"})
    tool_call = respond({"messages": conversation, "tools": [SEARCH, CONVERT]}).tool_calls[0]
    conversation += [
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": tool_call["id"], "content": '{"converted": 2412.5}'},
    ]
    answer = respond({"messages": conversation, "tools": [SEARCH, CONVERT]})
    assert not answer.tool_calls
    assert answer.content and answer.content.startswith(LABEL) and "2412.5" in answer.content


def test_a_tool_it_already_has_and_can_fill_is_called_without_searching() -> None:
    user = {"role": "user", "content": "Convert 3 EUR to USD"}
    assert _call(respond({"messages": [user], "tools": [SEARCH, CONVERT]}))[0] == "money__convert"


def test_tool_choice_is_honoured() -> None:
    body = {"messages": [{"role": "user", "content": "Convert 3 EUR to USD"}], "tools": [SEARCH, CONVERT]}
    assert not respond({**body, "tool_choice": "none"}).tool_calls
    forced = {"type": "function", "function": {"name": "search_tools"}}
    assert _call(respond({**body, "tool_choice": forced}))[0] == "search_tools"
    hello = {"messages": [{"role": "user", "content": "Hello"}], "tools": [SEARCH, CONVERT]}
    assert not respond(hello).tool_calls
    assert _call(respond({**hello, "tool_choice": "required"}))[0] == "search_tools"


def test_numbers_go_to_the_parameter_their_unit_names_and_time_units_convert() -> None:
    tool = {"type": "function", "function": {"name": "book_meeting", "description": "Book a meeting.",
            "parameters": {"type": "object", "required": ["length_minutes", "people"], "properties": {
                "length_minutes": {"type": "integer", "description": "Length in minutes", "maximum": 480},
                "people": {"type": "integer", "description": "How many people"}}}}}  # fmt: skip
    user = {"role": "user", "content": "Book a meeting for 6 people, 1.5 hours"}
    reply = respond({"messages": [user], "tools": [tool]})
    assert _call(reply) == ("book_meeting", {"length_minutes": 90, "people": 6})


def test_text_comes_from_the_word_naming_a_parameter_or_quotes_and_enums_from_the_words_used() -> None:
    note = {"type": "function", "function": {"name": "add_note", "description": "Add a note.",
            "parameters": {"type": "object", "required": ["title", "body"], "properties": {
                "title": {"type": "string"}, "body": {"type": "string"},
                "digest": {"type": "string", "enum": ["md5", "sha256"]}}}}}  # fmt: skip
    user = {"role": "user", "content": "Add a note titled Groceries with body 'milk, eggs' and an md5 digest"}
    assert _call(respond({"messages": [user], "tools": [note]})) == (
        "add_note",
        {"title": "Groceries", "body": "milk, eggs", "digest": "md5"},
    )


async def test_the_model_server_streams_like_openai_and_refuses_bad_bodies_in_openai_shape() -> None:
    transport = httpx.ASGITransport(app=create_model_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
        bad = await client.post("/v1/chat/completions", content=b"{not json")
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
        body = {"messages": [{"role": "user", "content": "Convert 3 EUR to USD"}], "tools": [CONVERT], "stream": True,
                "stream_options": {"include_usage": True}}  # fmt: skip
        streamed = await client.post("/v1/chat/completions", json=body)
    events = [line[6:] for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    arguments = "".join(
        call["function"].get("arguments", "")
        for chunk in chunks
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls", [])
    )
    assert json.loads(arguments) == {"amount": 3, "source": "EUR", "target": "USD"}
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
ABOUT = st.sampled_from(["Amount in minutes", "City name", "YYYY-MM-DD", "ISO 8601 start time", "'a' or 'b'", "email"])
PROPERTY = (
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["string", "number", "integer", "array"]) | JSON,
            "description": ABOUT | JSON,
            **{key: JSON for key in ("enum", "anyOf", "minimum", "maximum", "items")},
        },
    )
    | JSON
)
NAMES = st.sampled_from(["amount", "to_currency", "start_date", "city", "title", "note_id"]) | st.text(max_size=8)
SCHEMA = st.fixed_dictionaries(
    {}, optional={"properties": st.dictionaries(NAMES, PROPERTY, max_size=4), "required": JSON | st.lists(NAMES)}
)
FUNCTION = st.fixed_dictionaries(
    {"name": st.sampled_from(["search_tools", "a__b", "convert_x"]) | JSON},
    optional={"description": JSON, "parameters": SCHEMA | JSON},
)
TOOL = st.fixed_dictionaries({"type": st.just("function"), "function": FUNCTION}) | JSON
# Messages whose words meet the tools' names, so that arguments get filled from hostile schemas.
WORDS = st.sampled_from(
    ["Convert 250 USD to EUR and save it", "convert b 'quoted' 2025-01-01 10:30 a@b.co 5% over 2 hours in Paris"]
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"]) | JSON},
    optional={"content": WORDS | st.text(max_size=60) | JSON, "tool_calls": JSON, "tool_call_id": JSON},
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(MESSAGE, max_size=6), tools=st.lists(TOOL, max_size=4) | JSON, choice=JSON)
def test_any_conversation_gets_a_labelled_answer_or_a_tool_call(messages: Any, tools: Any, choice: Any) -> None:
    reply = respond({"messages": messages, "tools": tools, "tool_choice": choice})
    assert bool(reply.tool_calls) != bool(reply.content)
    assert reply.tool_calls or (reply.content or "").startswith(LABEL)


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


NOTES = [
    _function(
        "notes__create_note",
        "Create a new note and return it.",
        {"title": {"type": "string", "description": "Short title."}, "body": {"type": "string"}},
        ["title", "body"],
    ),
    _function("notes__list_notes", "List notes, oldest first.", {"limit": {"type": "integer"}}, []),
    _function("notes__get_note", "Get a note by id.", {"note_id": {"type": "string"}}, ["note_id"]),
]


def test_dictated_text_after_a_colon_is_what_to_write_down() -> None:
    reply = respond({"messages": [{"role": "user", "content": "Note: buy milk."}], "tools": NOTES})
    assert _call(reply) == ("notes__create_note", {"title": "buy milk", "body": "buy milk"})


def test_an_identifier_the_user_names_fills_an_id_parameter_and_a_plain_word_does_not() -> None:
    order = _function("order_status", "Where an order is.", {"order_id": {"type": "string"}}, ["order_id"])
    reply = respond({"messages": [{"role": "user", "content": "where is order o-1?"}], "tools": [order]})
    assert _call(reply) == ("order_status", {"order_id": "o-1"})
    reply = respond({"messages": [{"role": "user", "content": "get note milk"}], "tools": NOTES})
    assert all(json.loads(call["function"]["arguments"]).get("note_id") != "milk" for call in reply.tool_calls)
