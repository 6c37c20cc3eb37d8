"""A stdio server's instances as one connection: calls go to the least busy instance that can serve, ties in
turn; the state and the tools are those of the instances that are up."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types
import pytest

from app.config import parse_config
from app.config.loading import ConfigError
from app.mcp.client.pool import ServerPool
from app.mcp.client.state import ServerState, ServerUnavailable


class Process:
    def __init__(self, pid: int) -> None:
        self.pid: int | None = pid
        self.finished = False


class FakeMember:
    """One instance: answers with its own number, after `release` is set when `hold` is on."""

    def __init__(self, number: int, state: ServerState = ServerState.UP) -> None:
        self.name = "who"
        self.transport_name = "stdio"
        self.state = state
        self.error: str | None = None if state is ServerState.UP else f"instance {number} is {state.value}"
        self.tools = [mcp_types.Tool(name=f"tool{number}", input_schema={"type": "object"})]
        self.notes: list[str] = []
        self.tool_timeout = 5.0
        self.output: Any = Process(1000 + number)
        self.number = number
        self.hold = False
        self.release = asyncio.Event()
        self.calls = 0

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        self.calls += 1
        if self.hold:
            await self.release.wait()
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=str(self.number))])

    def stderr(self) -> list[str]:
        return [f"last words of {self.number}"] if self.state is ServerState.DOWN else []


def answered(result: mcp_types.CallToolResult) -> int:
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent)
    return int(content.text)


async def test_idle_instances_take_calls_in_turn() -> None:
    pool = ServerPool("who", [FakeMember(0), FakeMember(1), FakeMember(2)])
    assert [answered(await pool.call("t", {})) for _ in range(6)] == [0, 1, 2, 0, 1, 2]


async def test_a_call_goes_to_the_least_busy_instance() -> None:
    members = [FakeMember(0), FakeMember(1)]
    members[0].hold = True
    pool = ServerPool("who", members)
    slow = asyncio.ensure_future(pool.call("t", {}))
    await asyncio.sleep(0)
    assert pool.busy == [1, 0]
    assert [answered(await pool.call("t", {})) for _ in range(3)] == [1, 1, 1], "the busy one gets none"
    members[0].release.set()
    assert answered(await slow) == 0 and pool.busy == [0, 0]


async def test_an_instance_that_is_down_or_whose_process_ended_gets_no_call() -> None:
    members = [FakeMember(0, ServerState.DOWN), FakeMember(1), FakeMember(2)]
    members[2].output.finished = True  # exited, not yet seen down by its connection
    pool = ServerPool("who", members)
    assert {answered(await pool.call("t", {})) for _ in range(4)} == {1}
    assert pool.state is ServerState.UP and pool.error is None
    assert [tool.name for tool in pool.tools] == ["tool1"], "the tools of one instance that is up"
    assert pool.stderr() == ["last words of 0"]
    assert [one["state"] for one in pool.instances()] == ["down", "up", "up"]
    assert pool.instances()[1]["pid"] == 1001 and pool.instances()[0]["error"] == "instance 0 is down"


async def test_with_no_instance_up_a_call_says_why() -> None:
    pool = ServerPool("who", [FakeMember(0, ServerState.DOWN), FakeMember(1, ServerState.CONNECTING)])
    assert pool.state is ServerState.CONNECTING and pool.tools == []
    with pytest.raises(ServerUnavailable, match="MCP server 'who' is connecting: instance 0 is down"):
        await pool.call("t", {})
    disabled = ServerPool("who", [FakeMember(0, ServerState.DISABLED)])
    assert disabled.state is ServerState.DISABLED


def test_instances_is_for_stdio_servers() -> None:
    config = parse_config({"mcpServers": {"a": {"command": "python", "args": ["a.py"], "instances": 4}}}, environ={})
    assert config.mcp_servers["a"].instances == 4
    assert parse_config({"mcpServers": {"b": {"command": "x"}}}, environ={}).mcp_servers["b"].instances == 1
    with pytest.raises(ConfigError, match="'instances' applies to stdio servers"):
        parse_config({"mcpServers": {"r": {"url": "http://127.0.0.1:1/mcp", "instances": 2}}}, environ={})
    with pytest.raises(ConfigError):
        parse_config({"mcpServers": {"z": {"command": "x", "instances": 0}}}, environ={})


async def test_a_process_that_cannot_be_waited_for_is_not_taken_for_dead() -> None:
    from app.mcp.client.stderr import ServerOutput

    class Unwaitable:
        pid, returncode = 4242, None

        async def wait(self) -> int:
            raise RuntimeError("no child watcher")

    output = ServerOutput("who")
    output._process = Unwaitable()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(output.exited(), 0.2)
    assert output.pid == 4242 and not output.finished
