"""A stdio server's messages are read within a bound and large ones are parsed off the event loop: a server that
writes a line without end is reported down with that reason (and the gateway's memory does not follow it), and a
listing of thousands of tools arrives whole, parsed in the worker pool. Real processes."""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp.shared.message import SessionMessage

from app.config import parse_config
from app.mcp.client import large_messages, pipe
from app.mcp.client.connections import McpManager
from tests.support import ROOT
from tests.support.mcp import wait_for
from tests.support.remote import serve_over_http

TEST_SERVERS = ROOT / "tests" / "servers"


def manager_for(server: str, env: dict[str, str], limits: dict[str, Any]) -> McpManager:
    entry = {"command": sys.executable, "args": [str(TEST_SERVERS / server)], "env": env, "defer_loading": True}
    return McpManager(parse_config({"mcpServers": {"it": entry}, "mcp_limits": limits}, environ={}))


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_remote_servers_message_over_the_limit_ends_its_connection(transport: str) -> None:
    """The same bound over HTTP: a listing of 2,000 tools (about a megabyte) against a limit of 256 KB."""
    environ = {**os.environ, "MANY_TOOLS": "2000"}
    for url in serve_over_http(TEST_SERVERS / "many_tools.py", transport, environ):
        kind = "streamable-http" if transport == "http" else "sse"
        entry = {"url": url, "transport": kind, "startup_timeout": 20}
        limits = {"max_message_bytes": 262144, "max_tools_per_server": 5000}
        manager = McpManager(parse_config({"mcpServers": {"it": entry}, "mcp_limits": limits}, environ={}))
        await manager.start()
        connection = manager.connections["it"]
        try:
            await wait_for(lambda: connection.state.value == "down", 30)  # noqa: B023 - awaited in this iteration
            assert "over 262,144 bytes (mcp_limits.max_message_bytes)" in (connection.error or ""), connection.error
        finally:
            await manager.stop()


async def test_a_line_without_end_ends_the_connection_with_its_reason() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    manager = manager_for("flood.py", {"FLOOD_BYTES": str(64 * 1024 * 1024)}, {"max_message_bytes": 1_000_000})
    await manager.start()
    try:
        connection = manager.connections["it"]
        await wait_for(lambda: connection.state.value == "down", 30)
        assert "over 1,000,000 bytes (mcp_limits.max_message_bytes)" in (connection.error or "")
        assert manager.health()["it"]["error"] == connection.error
    finally:
        await manager.stop()
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 48, f"the gateway kept {grown_mb:.0f} MB of a 64 MB line"


async def test_thousands_of_tools_arrive_whole_parsed_in_the_worker_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[tuple[int, str]] = []
    real_line, real_large = large_messages.parse_line, large_messages.parse_large

    def spy_line(line: bytes) -> Any:
        parsed.append((len(line), threading.current_thread().name))
        return real_line(line)

    def spy_large(line: bytes, listings: Any) -> Any:
        parsed.append((len(line), threading.current_thread().name))
        return real_large(line, listings)

    monkeypatch.setattr(pipe, "parse_line", spy_line)
    monkeypatch.setattr(large_messages, "parse_large", spy_large)
    manager = manager_for("many_tools.py", {"MANY_TOOLS": "2000"}, {"max_tools_per_server": 5000})
    await manager.start()
    try:
        connection = manager.connections["it"]
        assert connection.state.value == "up", connection.error
        tools = {tool.name: tool for tool in connection.tools}
        assert len(tools) == 2000
        assert tools["lookup_1234"].description is not None
        assert tools["lookup_1234"].description.startswith("Look up record 1234 in ledger 70. Returns the record")
        assert tools["lookup_1234"].input_schema["properties"]["record_id"]["description"] == (
            "The record's id (ledger 70)"
        )
        _, failed = await manager.call_tool("it", "lookup_7", {"record_id": "r1"})
        assert failed, "the generated tools have no function: the call reaches the server and fails there"
    finally:
        await manager.stop()
    large = [thread for size, thread in parsed if size > large_messages.LARGE_LINE_BYTES]
    assert large and all(thread.startswith("toolsift-work") for thread in large), parsed
    assert any(size <= large_messages.LARGE_LINE_BYTES and thread == "MainThread" for size, thread in parsed)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_remote_servers_large_listing_arrives_whole_checked_in_the_worker_pool(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over streamable HTTP and SSE, the answer to tools/list is an event: taken apart in the pool, as over stdio."""
    threads: list[str] = []
    real = large_messages.parse_large

    def spy(data: bytes, listings: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(data, listings)

    monkeypatch.setattr(large_messages, "parse_large", spy)
    for url in serve_over_http(TEST_SERVERS / "many_tools.py", transport, {**os.environ, "MANY_TOOLS": "2000"}):
        kind = "streamable-http" if transport == "http" else "sse"
        entry = {"url": url, "transport": kind, "startup_timeout": 20}
        manager = McpManager(parse_config({"mcpServers": {"it": entry}, "mcp_limits": {"max_tools_per_server": 5000}}))
        await manager.start()
        try:
            connection = manager.connections["it"]
            assert connection.state.value == "up", connection.error
            tools = {tool.name: tool for tool in connection.tools}
            assert len(tools) == 2000 and tools["lookup_1999"].description is not None
            assert tools["lookup_1999"].description.startswith("Look up record 1999 in ledger 59.")
            _, failed = await manager.call_tool("it", "lookup_3", {"record_id": "r"})
            assert failed, "the call reaches the server (whose generated tools have no function)"
        finally:
            await manager.stop()
    assert threads and all(name.startswith("toolsift-work") for name in threads), threads


async def test_a_listing_of_a_few_dozen_tools_is_checked_in_the_worker_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small enough to parse where it arrives, but the SDK's three checks of 100 tools would still cost the loop
    several milliseconds: while a listing is awaited, such a line goes to the pool."""
    threads: list[tuple[int, str]] = []
    real = large_messages.parse_large

    def spy(line: bytes, listings: Any) -> Any:
        threads.append((len(line), threading.current_thread().name))
        return real(line, listings)

    monkeypatch.setattr(large_messages, "parse_large", spy)
    manager = manager_for("many_tools.py", {"MANY_TOOLS": "100"}, {})
    await manager.start()
    try:
        connection = manager.connections["it"]
        assert connection.state.value == "up", connection.error
        assert len(connection.tools) == 100 and connection.tools[42].name == "lookup_42"
    finally:
        await manager.stop()
    assert threads and all(size < large_messages.LARGE_LINE_BYTES for size, _ in threads), threads
    assert all(thread.startswith("toolsift-work") for _, thread in threads), threads


@pytest.mark.parametrize(
    "text",
    [
        '{"jsonrpc": "2.0", "id": 3, "result": {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}}',
        ' { "b" : [ 1 , [2, {"c": []}] , "x\\u00e9\\ud83d\\ude00" ] , "d": {} , "e": [] , "f": null } ',
        '[{"a": 1}, 2.5e3, true, false, null, "\\"quoted\\""]',
        '{"k": 1, "k": 2}',
    ],
)
def test_decoding_in_pieces_is_json_loads(text: str) -> None:
    assert large_messages.decode(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a": 1', '{"a" 1}', "[1, 2", "[1 2]", '{"a": 1} x', "{a: 1}", ""])
def test_decoding_in_pieces_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        large_messages.decode(text)


def test_a_large_listing_reaches_the_sdk_without_its_tools_which_are_validated_apart() -> None:
    tools = [{"name": f"t{i}", "description": "d" * 400, "inputSchema": {"type": "object"}} for i in range(1000)]
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"tools": tools, "nextCursor": "c2"}}).encode()
    assert len(line) > large_messages.LARGE_LINE_BYTES
    parsed = large_messages.parse_large(line, {7})
    assert isinstance(parsed.message, SessionMessage) and parsed.tools is not None
    result = mcp_types.ListToolsResult.model_validate(parsed.message.message.result)  # type: ignore[union-attr]
    assert result.tools == [] and result.next_cursor == "c2"
    assert len(parsed.tools) == 1000 and parsed.tools[5].name == "t5" and parsed.tools[5].description == "d" * 400
    other = large_messages.parse_large(line, {8})  # not a listing asked for: left whole
    assert other.tools is None and len(other.message.message.result["tools"]) == 1000  # type: ignore[union-attr]
    broken = large_messages.parse_large(line.replace(b'"name": "t5"', b'"name": 5'), {7})
    assert broken.tools is None, "a bad tool leaves the answer whole, for the SDK's own error"
    with pytest.raises(ValueError):
        mcp_types.ListToolsResult.model_validate(broken.message.message.result)  # type: ignore[union-attr]
    assert isinstance(large_messages.parse_large(line[:-5], {7}).message, ValueError)
    assert isinstance(large_messages.parse_large(b"[" * 100_000, {7}).message, Exception)


def test_the_test_servers_exist() -> None:
    assert Path(TEST_SERVERS / "flood.py").is_file() and Path(TEST_SERVERS / "many_tools.py").is_file()
