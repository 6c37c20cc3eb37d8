"""A tool outside the tool set a request may see is refused by one function, `RequestTools.refusal`, however it is
asked for: a chat's model calling it, a `run_task` task's model calling it, and an MCP client calling it on the
MCP front. The test replaces that one function and sees its words in all three."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastmcp import Client

from app.core.model import ChatRequest, Message, Options
from app.engine.api import Engine
from app.engine.caller import Caller
from app.engine.gateway import Gateway
from app.engine.request_tools import RequestTools, ToolKind
from app.fronts.mcp.server import McpFront
from tests.support import example_targets, make_config
from tests.support.engine import ScriptedProvider, calls, said

OUTSIDE = "weather__get_alerts"  # the `money` tool set has two finance tools only


@pytest.fixture
async def engine() -> AsyncIterator[tuple[Gateway, ScriptedProvider]]:
    provider = ScriptedProvider("up")
    targets = example_targets("weather", "finance")
    config = make_config(
        mcpServers={"weather": {"command": "unused"}, "finance": {"command": "unused", "defer_loading": True}},
        tool_sets={"money": {"servers": {"finance": ["convert_currency", "get_exchange_rates"]}}},
        mcp_front={"run_task": {"model": "fast"}},
    )
    gateway = Gateway(config, mcp_targets=targets, providers={"up": provider})
    await gateway.start()
    yield gateway, provider
    await gateway.stop()


@pytest.fixture
def refusals(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ToolKind]]:
    """Every refusal, in the one function's replacement's words."""
    seen: list[tuple[str, ToolKind]] = []

    def refusal(self: RequestTools, name: str, kind: ToolKind) -> str:
        seen.append((name, kind))
        return f"REFUSED {name}"

    monkeypatch.setattr(RequestTools, "refusal", refusal)
    return seen


async def test_chat_run_task_and_the_mcp_front_refuse_by_one_function(
    engine: tuple[Gateway, ScriptedProvider], refusals: list[tuple[str, ToolKind]]
) -> None:
    gateway, provider = engine
    provider.script += [calls((OUTSIDE, {"region": "EU"})), said("no alerts then")]
    request = ChatRequest("fast", [Message("user", "alerts?")], [], Options(), tool_set="money")
    async for _ in gateway.run(request, Caller()):
        pass
    chat_result = provider.rounds[-1].messages[-1]
    assert chat_result.role == "tool" and chat_result.text() == f"REFUSED {OUTSIDE}"

    assert gateway.tasks is not None
    provider.script += [calls((OUTSIDE, {"region": "EU"})), said("done")]
    await gateway.tasks.run("alerts?", "money")
    assert provider.rounds[-1].messages[-1].text() == f"REFUSED {OUTSIDE}", "run_task's model got the same words"

    front = McpFront(Engine(gateway), "full", "money")
    async with Client(front.server, mode="legacy") as client:
        result: Any = await client.call_tool_mcp(OUTSIDE, {"region": "EU"})
    assert result.isError and result.content[0].text == f"REFUSED {OUTSIDE}"
    assert [name for name, _ in refusals] == [OUTSIDE, OUTSIDE, OUTSIDE]
