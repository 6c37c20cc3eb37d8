"""`run_task` on the MCP front: a whole task run by the gateway's own loop, over HTTP and over stdio, driven by
fastmcp's client as an MCP client would, against a scripted upstream."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.support import ROOT, SERVERS, ScriptedUpstream, completion, free_port, served_gateway

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
TESTS_SERVERS = ROOT / "tests" / "servers"
NOTE = {"title": "Groceries", "body": "milk, eggs"}


def config_for(tmp: Path, scripted: ScriptedUpstream, **run_task: Any) -> Path:
    marker = tmp / "slow-marker.txt"
    config = {
        "providers": {"up": {"base_url": scripted.base_url, "api_key": "k", "max_retries": 0, "deferral": "tools"}},
        "models": {"worker": {"provider": "up", "model": "scripted-model"}},
        "mcpServers": {
            "notes": {"command": sys.executable, "args": [str(SERVERS / "notes.py")], "defer_loading": True},
            "danger": {"command": sys.executable, "args": [str(TESTS_SERVERS / "danger.py")], "defer_loading": True},
            "slow": {
                "command": sys.executable,
                "args": [str(TESTS_SERVERS / "slow.py")],
                "env": {"SLOW_MARKER": str(marker)},
            },
        },
        "tool_discovery": {"semantic": {"enabled": False}, "prefetch": 0},
        "mcp_front": {"mode": "proxy", "run_task": {"model": "worker", **run_task}},
    }
    path = tmp / "config.json"
    path.write_text(json.dumps(config))
    return path


def stdio(config: Path) -> Client[Any]:
    transport = StdioTransport(TOOLSIFT, ["mcp", "--stdio", "--config", str(config)], cwd=str(ROOT))
    return Client(transport, timeout=60, init_timeout=60)


def text(result: mcp_types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def run_task(client: Client[Any], task: str, **extra: Any) -> tuple[mcp_types.CallToolResult, list[str]]:
    messages: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    result = await client.call_tool_mcp("run_task", {"task": task, **extra}, progress_handler=progress)
    return result, messages


def save_a_note_script() -> list[dict[str, Any]]:
    return [
        completion(calls=[("search_tools", {"query": "create a note"})]),
        completion(calls=[("notes__create_note", NOTE)]),
        completion("Saved your groceries note."),
    ]


async def check_a_whole_task(client: Client[Any], scripted: ScriptedUpstream) -> None:
    scripted.script(*save_a_note_script())
    result, progress = await run_task(client, "Save a note called Groceries: milk, eggs")
    body = text(result)
    assert not result.isError, body
    assert body.startswith("Saved your groceries note.")
    assert "called notes__create_note: ok" in body and "searched 'create a note'" in body
    assert result.structuredContent is not None and result.structuredContent["rounds"] == 3
    assert [call["name"] for call in result.structuredContent["calls"]] == ["notes__create_note"]
    assert any(message.startswith("searched 'create a note'") for message in progress)
    assert "calling notes__create_note" in progress and any("notes__create_note: ok" in m for m in progress)
    assert len(scripted.requests) == 3
    assert scripted.requests[0]["model"] == "scripted-model"
    assert "notes__create_note" in scripted.tool_names(1), "found by search, loaded for the next round"
    assert scripted.requests[0]["messages"] == [
        {"role": "user", "content": "Save a note called Groceries: milk, eggs"}
    ], "only the task: the calling client's context never reaches the upstream"


async def test_run_task_over_stdio(tmp_path: Path, scripted: ScriptedUpstream) -> None:
    async with stdio(config_for(tmp_path, scripted)) as client:
        assert "run_task" in [tool.name for tool in await client.list_tools()]
        await check_a_whole_task(client, scripted)

        # A destructive tool is refused, and both the model and the record say so.
        scripted.script(
            completion(calls=[("search_tools", {"tool_names": ["danger__wipe_records", "danger__count_records"]})]),
            completion(
                calls=[("danger__wipe_records", {"table": "users"}), ("danger__count_records", {"table": "users"})]
            ),
            completion("I could count them but not wipe them."),
        )
        result, _ = await run_task(client, "wipe the users table")
        body = text(result)
        assert "refused danger__wipe_records" in body and "destructive" in body
        assert "called danger__count_records: ok" in body
        told = [m["content"] for m in scripted.requests[2]["messages"] if m["role"] == "tool"]
        assert any("was not run" in content and "destructive" in content for content in told)

        # Limits and errors come back as a tool error the calling model can read.
        scripted.script()  # the upstream answers 500: script exhausted
        result, _ = await run_task(client, "anything")
        assert result.isError and "error:" in text(result) and "script exhausted" in text(result)
        result, _ = await run_task(client, "  ")
        assert result.isError and "'task'" in text(result)
        result, _ = await run_task(client, "x", tool_set="nope")
        assert result.isError and "Unknown tool_set 'nope'" in text(result)


async def test_run_task_over_http_and_cancellation(tmp_path: Path, scripted: ScriptedUpstream) -> None:
    port = free_port()
    config = config_for(tmp_path, scripted, allow_destructive=True, deadline_seconds=60)
    with served_gateway(config, port) as base:
        async with Client(f"{base}/mcp", timeout=60) as client:
            await check_a_whole_task(client, scripted)

            # The client cancels while a tool runs: the tool is cancelled, the gateway goes on serving.
            scripted.script(completion(calls=[("slow__long_report", {"topic": "q3"})]), completion("late"))
            progress = asyncio.Event()
            call = asyncio.ensure_future(
                client.call_tool_mcp(
                    "run_task", {"task": "write the q3 report"}, progress_handler=lambda *_: _set(progress)
                )
            )
            await asyncio.wait_for(progress.wait(), 30)
            marker = tmp_path / "slow-marker.txt"
            for _ in range(100):
                if marker.exists():
                    break
                await asyncio.sleep(0.1)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            for _ in range(100):
                if marker.read_text() == "cancelled":
                    break
                await asyncio.sleep(0.1)
            assert marker.read_text() == "cancelled", "the pending MCP call was cancelled with the task"
            await check_a_whole_task(client, scripted)


async def _set(event: asyncio.Event) -> None:
    event.set()


def test_the_record_names_a_search_by_name_or_server_as_such() -> None:
    from app.engine.events import SearchDone
    from app.engine.task_runner import TaskReport

    report = TaskReport("done", "stop", 2, None, searches=[SearchDone(None, ("notes__create_note",), False)])
    assert "searched by tool name or server: notes__create_note" in report.text()
    assert "None" not in report.text()
