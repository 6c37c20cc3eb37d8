"""The OpenAI Agents SDK pointed at toolsift with `OpenAIResponsesModel`, in memory: tools found by search, MCP tools
run in the gateway, the agent's own function tools run by the agent and continued (by resending the input, and by
`previous_response_id`), usage summed, streamed events in order."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, WebSearchTool, function_tool, set_tracing_disabled

from app.engine.kept_rounds import mark
from tests.support import Upstream, completion, make_config
from tests.support.responses import NOTE, REFUSING, streamed

set_tracing_disabled(True)
SHIPPED: list[str] = []


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    SHIPPED.append(order_id)
    return f"order {order_id}: shipped"


def agent_on(client: openai.AsyncOpenAI, **extra: Any) -> Agent[Any]:
    model = OpenAIResponsesModel(model="fast", openai_client=client)
    return Agent(name="helper", instructions="Be brief.", model=model, tools=[lookup_order], **extra)


def recording(client: httpx.AsyncClient) -> tuple[openai.AsyncOpenAI, list[dict[str, Any]]]:
    """The SDK on the in-memory gateway, and the Responses request bodies it sends."""
    sent: list[dict[str, Any]] = []

    async def record(request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path == "/v1/responses":
            sent.append(json.loads(request.content))

    client.event_hooks["request"].append(record)
    api = openai.AsyncOpenAI(base_url="http://gw/v1", api_key="unused", http_client=client, max_retries=0)
    return api, sent


def rounds() -> list[dict[str, Any]]:
    """Search, an MCP tool (run by the gateway), the agent's own tool (run by the agent), the answer."""
    return [
        completion(calls=[("search_tools", {"query": "create a note"})], usage=(10, 1)),
        completion(calls=[("notes__create_note", NOTE)], usage=(20, 2)),
        completion(calls=[("lookup_order", {"order_id": "o-1"})], usage=(30, 3)),
        completion("Noted, and o-1 shipped.", usage=(40, 4)),
    ]


async def test_agent_run_with_search_mcp_and_its_own_tool(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    api, sent = recording(client)
    upstream.script(*rounds())
    result = await Runner.run(agent_on(api), "note milk, and where is o-1?")
    assert result.final_output == "Noted, and o-1 shipped."
    assert SHIPPED[-1] == "o-1", "the agent ran its own tool"
    usage = result.context_wrapper.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (2, 100, 10, 110)
    assert "previous_response_id" not in sent[1], "by default the agent resends the whole input"
    assert [item.get("type") for item in sent[1]["input"]][-2:] == ["function_call", "function_call_output"]
    final_round = upstream.requests[3]["messages"]
    assert final_round[0] == {"role": "system", "content": "Be brief."}
    marked = mark("call_0_lookup_order")  # the call followed rounds the gateway ran: they are kept under it
    assert final_round[-1] == {"role": "tool", "content": "order o-1: shipped", "tool_call_id": marked}
    called = [turn["tool_calls"][0]["function"]["name"] for turn in final_round if turn.get("tool_calls")]
    assert called == ["search_tools", "notes__create_note", "lookup_order"], "the note is not created again"


async def test_agent_streamed_and_chained_by_previous_response_id(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    api, sent = recording(client)
    upstream.script(*[streamed(reply) for reply in rounds()])
    result = Runner.run_streamed(agent_on(api), "note milk, and where is o-1?", auto_previous_response_id=True)
    kinds = [event.data.type async for event in result.stream_events() if event.type == "raw_response_event"]
    assert result.final_output == "Noted, and o-1 shipped."
    assert result.context_wrapper.usage.total_tokens == 110
    first, second = kinds[: kinds.index("response.completed") + 1], kinds[kinds.index("response.completed") + 1 :]
    assert first == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert second[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert second[-1] == "response.completed"
    assert sent[1]["previous_response_id"], "the agent chained its second request"
    assert [item["type"] for item in sent[1]["input"]] == ["function_call_output"]
    messages = upstream.requests[3]["messages"]
    assert messages[1] == {"role": "user", "content": "note milk, and where is o-1?"}
    called = [turn["tool_calls"][0]["function"]["name"] for turn in messages if turn.get("tool_calls")]
    assert called == ["search_tools", "notes__create_note", "lookup_order"], "the stored turn and its rounds"
    assert messages[-1]["content"] == "order o-1: shipped"
    assert "notes__create_note" in upstream.tool_names(3), "what the previous response found stays loaded"


async def test_agent_with_a_hosted_tool_gets_a_clear_400(upstream: Upstream, gateway_factory: Any) -> None:
    """With `unsupported_hosted_tools: "refuse"`: a hosted tool the upstream cannot run is a 400."""
    client, _ = await gateway_factory(make_config(providers=REFUSING))
    api, _ = recording(client)
    agent = Agent(name="web", model=OpenAIResponsesModel(model="fast", openai_client=api), tools=[WebSearchTool()])
    with pytest.raises(openai.BadRequestError) as refused:
        await Runner.run(agent, "news?")
    assert "hosted tool 'web_search' is not supported" in refused.value.message
    assert upstream.requests == []
