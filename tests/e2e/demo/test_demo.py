"""`make demo`: the gateway on the bundled config and its real MCP servers, answered by the scripted stand-in model.

The quick-start examples are read from README.md and docs/fronts-and-clients.md and run as they are (curl's body,
the Python SDK and streaming snippets), so the docs cannot promise what the demo does not do (tests/e2e/docs runs
every other runnable block).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import Any

import httpx
import pytest
from openai import OpenAI

from app.demo.model import LABEL, respond
from tests.support import ROOT

README = (ROOT / "README.md").read_text()
CLIENTS = (ROOT / "docs" / "fronts-and-clients.md").read_text()
# What each quick-start prompt's answer must contain: the MCP tools' own results for it (the prompts are the docs';
# the demo model never sees this table).
EXPECTED = {
    "Convert 250 USD to EUR and save the result as a note.": ["219.25", "notes__create_note", '"id": "note-'],
    "What's on my work calendar on 2025-06-09?": ["calendar__list_events", "Sprint planning"],
    "Find a free hour on my work calendar on 2025-06-09.": ["calendar__find_free_slots", "2025-06-09T10:30:00"],
    "What is the monthly payment on a 300000 USD loan at 6.5% over 30 years?": ["1896.2"],
}


def _section(title: str, document: str = README) -> str:
    start = document.index(f"## {title}")
    return document[start : document.index("\n## ", start + 1)]


def _blocks(section: str, language: str, document: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _section(section, document), re.DOTALL)


def readme_prompts() -> list[str]:
    text = _section("Quick start") + _section("Chat Completions", CLIENTS) + _section("Streaming", CLIENTS)
    return re.findall(r'"content": "([^"]+)"', text) + re.findall(r'content: "([^"]+)"', text)


def _client(base: str) -> OpenAI:
    return OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0, timeout=30)


def _streamed(base: str, **request: Any) -> tuple[str, dict[str, Any]]:
    stream = _client(base).chat.completions.create(stream=True, stream_options={"include_usage": True}, **request)
    content, stats = "", {}
    for chunk in stream:
        if chunk.choices:
            content += chunk.choices[0].delta.content or ""
        else:
            stats = (chunk.model_extra or {})["tool_discovery"]
    return content, stats


def test_every_readme_prompt_has_an_expected_answer() -> None:
    assert sorted(readme_prompts()) == sorted(EXPECTED)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("prompt", sorted(EXPECTED))
def test_readme_prompts_search_call_an_mcp_tool_and_answer_with_result(demo: str, prompt: str, stream: bool) -> None:
    request: dict[str, Any] = {"model": "fast", "messages": [{"role": "user", "content": prompt}]}
    if stream:
        content, stats = _streamed(demo, **request)
    else:
        reply = _client(demo).chat.completions.create(**request)
        content, stats = reply.choices[0].message.content or "", (reply.model_extra or {})["tool_discovery"]
    assert content.startswith(LABEL)
    assert stats["search_calls"] >= 1
    assert stats["tools_called"] and all("__" in name for name in stats["tools_called"])  # MCP tools, run by MCP
    for expected in EXPECTED[prompt]:
        assert expected in content
    assert "Error" not in content


def test_readme_curl_body_and_python_snippets_run_unchanged(demo: str) -> None:
    curl = next(block for block in _blocks("Quick start", "sh") if block.startswith("curl"))
    body = json.loads(re.search(r"-d '(.*)'", curl, re.DOTALL)[1])  # type: ignore[index]
    answer = httpx.post(f"{demo}/v1/chat/completions", json=body, timeout=30).json()
    assert answer["choices"][0]["message"]["content"].startswith(LABEL)
    stats = answer["tool_discovery"]  # as the README says it is
    assert stats["search_calls"] >= 2  # one per task (a third loads the notes server when keywords rank it low)
    assert stats["tools_called"] == ["finance__convert_currency", "notes__create_note"]

    sdk = _blocks("Quick start", "python")[0].replace("http://127.0.0.1:8000", demo)
    streaming = _blocks("Streaming", "python", CLIENTS)[0].replace("http://127.0.0.1:8000", demo)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(sdk + "\n" + streaming, {})
    out = printed.getvalue()
    assert out.count(LABEL) == 2 and "Sprint planning" in out and "1896.2" in out
    assert out.count("'search_calls': 1") == 2 and "calendar__list_events" in out and "calculate_loan_payment" in out


@pytest.mark.parametrize(
    ("prompt", "wanted"),
    [("Convert USD to EUR.", "amount"), ("Get me a stock quote.", "symbol")],
)
def test_a_required_argument_the_message_lacks_is_asked_for(demo: str, prompt: str, wanted: str) -> None:
    reply = _client(demo).chat.completions.create(model="fast", messages=[{"role": "user", "content": prompt}])
    content = reply.choices[0].message.content or ""
    stats = (reply.model_extra or {})["tool_discovery"]
    assert content.startswith(LABEL) and wanted in content and content.rstrip().endswith("?")
    assert stats["search_calls"] >= 1 and stats["tools_called"] == []


def test_the_answer_to_its_question_completes_the_call(demo: str) -> None:
    messages: list[Any] = [{"role": "user", "content": "Get me a stock quote."}]
    question = _client(demo).chat.completions.create(model="fast", messages=messages)
    messages.append({"role": "assistant", "content": question.choices[0].message.content})
    messages.append({"role": "user", "content": "MSFT"})
    reply = _client(demo).chat.completions.create(model="fast", messages=messages)
    assert "finance__get_stock_quote" in (reply.model_extra or {})["tool_discovery"]["tools_called"]
    assert '"symbol": "MSFT"' in (reply.choices[0].message.content or "")


def test_a_message_no_tool_fits_is_answered_plainly(demo: str) -> None:
    reply = _client(demo).chat.completions.create(model="fast", messages=[{"role": "user", "content": "Hello there!"}])
    assert (reply.choices[0].message.content or "").startswith(LABEL)
    assert (reply.model_extra or {})["tool_discovery"]["rounds"] == 1


def test_a_client_tool_that_fits_goes_back_to_the_client_and_its_result_is_answered(demo: str) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up the shipping status of a customer order.",
            "parameters": {
                "type": "object",
                "properties": {"order_number": {"type": "integer", "description": "The order number."}},
                "required": ["order_number"],
            },
        },
    }
    messages: list[Any] = [{"role": "user", "content": "Where is my order 4521?"}]
    first = _client(demo).chat.completions.create(model="fast", messages=messages, tools=[tool])  # type: ignore[list-item]
    assert first.choices[0].finish_reason == "tool_calls"
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "lookup_order" and json.loads(call.function.arguments) == {"order_number": 4521}
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "shipped on June 3"},
    ]
    final = _client(demo).chat.completions.create(model="fast", messages=messages, tools=[tool])  # type: ignore[list-item]
    assert (final.choices[0].message.content or "").startswith(LABEL)
    assert "shipped on June 3" in (final.choices[0].message.content or "")


def test_tool_choice_none_gets_no_call() -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}  # fmt: skip
    body = {"messages": [{"role": "user", "content": "Weather in Paris"}], "tools": [tool]}
    assert respond(body).tool_calls
    assert not respond({**body, "tool_choice": "none"}).tool_calls
