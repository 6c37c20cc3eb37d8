"""A key whose identity may see the `money` tool set only calls a tool outside it, over HTTP, every way there is:
a chat's model on the three chat fronts, an MCP client on `/mcp`, and the model of a task the client hands over
with `run_task`. Each is refused by the one function (`RequestTools.refusal`), reached through the engine's door:
the test replaces it and sees the replacement's words everywhere."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn

from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.engine.request_tools import ToolKind
from app.server.app import create_app
from tests.support import free_port, load_example, make_config
from tests.support.engine import ScriptedProvider, calls, said
from tests.support.mcp import mcp_client, text
from tests.unit.engine.test_tool_set_refusal import OUTSIDE, refusals

__all__ = ["refusals"]  # the one function replaced, as in the unit test

ALICE = {"authorization": "Bearer gw-alice"}


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, ScriptedProvider]]:
    provider = ScriptedProvider("up")
    config = make_config(
        mcpServers={"weather": {"command": "unused"}, "finance": {"command": "unused", "defer_loading": True}},
        tool_sets={"money": {"servers": {"finance": ["convert_currency", "get_exchange_rates"]}}},
        mcp_front={"run_task": {"model": "fast"}},
        auth={"api_keys": [{"name": "alice", "key": "gw-alice", "tool_set": "money"}]},
    )
    targets = {name: load_example(name).mcp for name in ("weather", "finance")}
    gateway = Gateway(config, mcp_targets=targets, providers={"up": provider})
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(Engine(gateway)), port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        assert not serving.done(), "the gateway did not start"
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", provider
    finally:
        server.should_exit = True
        await serving


BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"model": "fast", "messages": [{"role": "user", "content": "alerts?"}]},
    "/v1/messages": {"model": "fast", "max_tokens": 100, "messages": [{"role": "user", "content": "alerts?"}]},
    "/v1/responses": {"model": "fast", "input": "alerts?", "store": False},
}


async def test_every_way_of_calling_a_tool_outside_the_keys_tool_set_is_refused_by_one_function(
    served: tuple[str, ScriptedProvider], refusals: list[tuple[str, ToolKind]]
) -> None:
    base, provider = served
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for path, body in BODIES.items():
            provider.script += [calls((OUTSIDE, {"region": "EU"})), said("no alerts then")]
            answered = await http.post(path, json=body, headers=ALICE)
            assert answered.status_code == 200, answered.text
            assert provider.rounds[-1].messages[-1].text() == f"REFUSED {OUTSIDE}", path

    async with mcp_client(f"{base}/mcp", "gw-alice") as client:
        called: Any = await client.call_tool_mcp(OUTSIDE, {"region": "EU"})
        assert called.isError and text(called) == f"REFUSED {OUTSIDE}"
        provider.script += [calls((OUTSIDE, {"region": "EU"})), said("done")]
        task: Any = await client.call_tool_mcp("run_task", {"task": "alerts?"})
        assert not task.isError and text(task).startswith("done")
    assert provider.rounds[-1].messages[-1].text() == f"REFUSED {OUTSIDE}", "run_task's model got the same words"
    assert [name for name, _ in refusals] == [OUTSIDE] * 5
