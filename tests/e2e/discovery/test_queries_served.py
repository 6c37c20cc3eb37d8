"""A model's one `search_tools` call of three queries, one per capability, through `toolsift serve`: the tools of
all three are loaded for the next round, so the scripted upstream sees one search round, not three. On every
front (chat, Responses, Messages; plain and streamed, with the official SDKs), over `/mcp` and in `run_task`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.support import SERVERS, ScriptedUpstream, completion, free_port, gateway_config, served_gateway
from tests.support.mcp import mcp_client, names, text

KEY = "gw-key"
QUERIES = ["convert currency", "create note", "count words"]
WANTED = {"finance__convert_currency", "notes__create_note", "textkit__count_words"}


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    servers = {
        name: {"command": sys.executable, "args": [str(SERVERS / f"{name}.py")], "defer_loading": True}
        for name in ("notes", "finance", "textkit")
    }
    config = gateway_config(
        scripted, claude=False, mcpServers=servers, auth={"api_keys": [KEY]}, mcp_front={"run_task": {"model": "fast"}}
    )
    path: Path = tmp_path_factory.mktemp("queries") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def _one_search_round(scripted: ScriptedUpstream) -> None:
    assert len(scripted.requests) == 2, "one search round, then the answer"
    assert set(scripted.tool_names(1)) >= WANTED and not WANTED & set(scripted.tool_names(0))
    result = next(m for m in scripted.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert result.startswith("Found ") and " for 3 queries:" in result.splitlines()[0]
    assert all(f"for '{query}'" in result for query in QUERIES)


def _chat(base: str, stream: bool) -> str:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)
    messages: Any = [{"role": "user", "content": "Convert 5 USD, note it, count the words."}]
    if not stream:
        return client.chat.completions.create(model="fast", messages=messages).choices[0].message.content or ""
    chunks = client.chat.completions.create(model="fast", messages=messages, stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


def _responses(base: str, stream: bool) -> str:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)
    task = "Convert 5 USD, note it, count the words."
    if not stream:
        return client.responses.create(model="fast", input=task).output_text
    with client.responses.stream(model="fast", input=task) as events:
        return events.get_final_response().output_text


def _messages(base: str, stream: bool) -> str:
    client = anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0)
    messages: Any = [{"role": "user", "content": "Convert 5 USD, note it, count the words."}]
    if not stream:
        reply = client.messages.create(model="fast", max_tokens=64, messages=messages)
        return "".join(block.text for block in reply.content if block.type == "text")
    with client.messages.stream(model="fast", max_tokens=64, messages=messages) as events:
        return "".join(events.text_stream)


FRONTS: dict[str, Callable[[str, bool], str]] = {"chat": _chat, "responses": _responses, "messages": _messages}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("front", list(FRONTS))
def test_one_call_of_three_queries_loads_three_capabilities_in_one_round(
    gateway: str, scripted: ScriptedUpstream, front: str, stream: bool
) -> None:
    scripted.script(completion(calls=[("search_tools", {"queries": QUERIES})]), completion("All three ready."))
    assert FRONTS[front](gateway, stream) == "All three ready."
    _one_search_round(scripted)


async def test_over_mcp_one_call_enables_the_tools_of_three_queries(gateway: str) -> None:
    async with mcp_client(f"{gateway}/mcp", KEY) as client:
        assert not WANTED & set(await names(client))
        found = await client.call_tool_mcp("search_tools", {"queries": QUERIES})
        assert not found.isError and " for 3 queries:" in text(found).splitlines()[0]
        assert set(await names(client)) >= WANTED


async def test_run_task_searches_three_capabilities_in_one_round(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(completion(calls=[("search_tools", {"queries": QUERIES})]), completion("Done in one search."))
    async with mcp_client(f"{gateway}/mcp", KEY) as client:
        result = await client.call_tool_mcp("run_task", {"task": "Convert 5 USD, note it, count the words."})
    body = text(result)
    assert not result.isError and body.startswith("Done in one search.") and "rounds: 2" in body
    assert "searched 'convert currency', 'create note', 'count words': " in body
    _one_search_round(scripted)
    assert result.structuredContent is not None
    assert result.structuredContent["searches"][0]["queries"] == QUERIES
