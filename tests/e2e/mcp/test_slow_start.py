"""A server that misses its start-up timeout is down with that cause, and up as soon as it answers: the gateway
stops waiting for it, not for its handshake (once, a missed timeout cancelled the only attempt for good)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from app.config import parse_config
from app.mcp.client.connections import McpManager
from app.mcp.client.state import ServerState
from tests.support import ROOT, SERVERS
from tests.support.mcp import ListChanged, wait_for

GATED = str(ROOT / "tests" / "servers" / "gated_start.py")
TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


async def test_a_server_past_its_start_up_timeout_comes_up_when_it_answers(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    entry = {"command": sys.executable, "args": [GATED], "env": {"START_GATE": str(gate)}, "startup_timeout": 1}
    manager = McpManager(parse_config({"mcpServers": {"slow": entry}}, environ={}))
    await manager.start()
    try:
        slow = manager.connections["slow"]
        assert slow.state is ServerState.DOWN
        assert slow.error is not None and "did not start within 1s" in slow.error
        await wait_for(lambda: Path(f"{gate}.waiting").exists(), 20)  # still starting: its process is alive
        gate.touch()  # it finishes starting 1 s or more after the gateway stopped waiting
        opened = time.monotonic()
        await wait_for(lambda: slow.state is ServerState.UP, 20)
        assert time.monotonic() - opened < 10, "up when it answers, not after a long backoff"
        assert [tool.name for tool in slow.tools] == ["started"]
        await wait_for(lambda: "slow__started" in manager.catalog.tools, 20)  # and served
    finally:
        await manager.stop()


async def test_the_stdio_front_answers_initialize_before_its_servers_and_says_when_a_late_one_comes_up(
    tmp_path: Path,
) -> None:
    """Six servers, two still starting: `initialize` does not wait for them (the MCP Inspector gives up after 15
    s); the first listing waits for the start (at most each server's timeout), and `list_changed` says when one
    that missed it comes up."""
    slow, late = tmp_path / "slow-gate", tmp_path / "late-gate"
    servers: dict[str, Any] = {name: {"command": sys.executable, "args": [str(SERVERS / f"{name}.py")]}
                               for name in ("weather", "notes", "finance", "textkit")}  # fmt: skip
    servers["slow"] = {"command": sys.executable, "args": [GATED], "env": {"START_GATE": str(slow)},
                       "startup_timeout": 60}  # fmt: skip
    servers["late"] = {"command": sys.executable, "args": [GATED], "env": {"START_GATE": str(late)},
                       "startup_timeout": 1}  # fmt: skip
    config = tmp_path / "config.json"
    discovery = {"semantic": {"enabled": False}}  # keyword search: no model loading in the worker pool meanwhile
    config.write_text(json.dumps({"mcpServers": servers, "mcp_front": {"mode": "full"}, "tool_discovery": discovery}))
    changes = ListChanged()
    transport = StdioTransport(TOOLSIFT, ["mcp", "--stdio", "--config", str(config)], cwd=str(ROOT))
    # The `initialize` handshake, as the MCP Inspector sends it; its connection has the stream pushes ride on.
    client = Client(transport, message_handler=changes, timeout=60, init_timeout=10, mode="legacy")
    async with client:  # while `slow` is held at its gate
        slow.touch()
        listed = [tool.name for tool in await client.list_tools()]
        assert "slow__started" in listed and "weather__get_alerts" in listed and "late__started" not in listed
        before = changes.count
        late.touch()
        await wait_for(lambda: changes.count > before, 30)
        assert "late__started" in [tool.name for tool in await client.list_tools()]


def test_initialize_is_answered_once_before_the_gateway_is_imported(tmp_path: Path) -> None:
    """The early answer to `initialize` is the only one the client gets (the server's own is dropped), and the
    session it opened goes on: the next requests are answered by the server behind it."""
    config = tmp_path / "config.json"
    servers = {"finance": {"command": sys.executable, "args": [str(SERVERS / "finance.py")]}}
    config.write_text(json.dumps({"mcpServers": servers, "tool_discovery": {"semantic": {"enabled": False}}}))
    process = subprocess.Popen([TOOLSIFT, "mcp", "--stdio", "--config", str(config)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=str(ROOT))  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # sent at once, as a client that does not wait may
    process.stdin.write(b"".join(json.dumps(message).encode() + b"\n" for message in messages))
    process.stdin.flush()
    answers = []
    try:
        while not any(answer.get("id") == 2 for answer in answers):
            answers.append(json.loads(process.stdout.readline()))
    finally:
        process.stdin.close()
        process.wait(30)
    initialized = [answer for answer in answers if answer.get("id") == 1]
    assert len(initialized) == 1 and initialized[0]["result"]["serverInfo"]["name"] == "toolsift"
    assert "finance__convert_currency" in [tool["name"] for tool in answers[-1]["result"]["tools"]]
