"""Real servers that talk too much (tests/servers/chatty.py): long log messages over stdio, a flood of log
notifications in one call over streamable HTTP, megabytes of stderr. Each call answers (or fails with the bound
it hit), the server stays up, and the gateway's log gets bounded one-line records."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import pytest
from rich.logging import RichHandler

from app.config import parse_config
from app.mcp.client.connections import McpManager
from app.mcp.client.server_log import LOG_TEXT_CHARS
from tests.support import ROOT
from tests.support.remote import serve_over_http

CHATTY = ROOT / "tests" / "servers" / "chatty.py"
pytestmark = pytest.mark.filterwarnings("ignore:The logging capability is deprecated")  # servers that log


def manager(entry: dict[str, Any], drops: dict[str, int], limits: dict[str, Any] | None = None) -> McpManager:
    def dropped(server: str, kind: str, count: int) -> None:
        drops[kind] = drops.get(kind, 0) + count

    config = parse_config({"mcpServers": {"chatty": entry}, "mcp_limits": limits or {}}, environ={})
    return McpManager(config, on_dropped=dropped)


def stdio() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(CHATTY)], "startup_timeout": 30}


async def test_a_stdio_servers_64_kb_log_messages_are_one_bounded_line_each(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    rich: list[logging.LogRecord] = []
    monkeypatch.setattr(RichHandler, "emit", lambda self, record: rich.append(record))
    caplog.set_level(logging.INFO)
    mcp = manager(stdio(), {})
    await mcp.start()
    try:
        assert await mcp.call_tool("chatty", "shout", {"size": 65536, "count": 4}) == ("sent 4", False)
    finally:
        await mcp.stop()
    records = [record.getMessage() for record in caplog.records if record.name == "toolsift.mcp.server"]
    assert len(records) == 4 and not rich
    assert all("\n" not in line and len(line) < LOG_TEXT_CHARS + 200 for line in records), [len(x) for x in records]
    assert "message 3: 111" in records[3] and records[3].endswith("...")


async def test_a_remote_flood_of_events_in_one_call_fails_that_call_and_the_server_answers_the_next(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    for url in serve_over_http(CHATTY, "http", dict(os.environ)):
        entry = {"url": url, "transport": "streamable-http", "startup_timeout": 20}
        drops: dict[str, int] = {}
        mcp = manager(entry, drops, {"max_call_bytes": 1024 * 1024, "max_message_bytes": 1024 * 1024})
        await mcp.start()
        try:
            text, failed = await mcp.call_tool("chatty", "flood", {"megabytes": 16, "size": 4096})
            assert failed and "over 1,048,576 bytes for one request (mcp_limits.max_call_bytes)" in text, text
            assert await mcp.call_tool("chatty", "echo", {"text": "still here"}) == ("still here", False)
            assert mcp.connections["chatty"].state.value == "up"
            assert drops["log_messages"] > 0, "the flood's log messages past the budget were counted"
        finally:
            await mcp.stop()


async def test_megabytes_of_stderr_reach_the_log_cut_and_within_a_budget(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    drops: dict[str, int] = {}
    mcp = manager(stdio(), drops)
    await mcp.start()
    try:
        assert await mcp.call_tool("chatty", "grumble", {"megabytes": 20}) == ("grumbled", False)
        assert await mcp.call_tool("chatty", "echo", {"text": "ok"}) == ("ok", False)
    finally:
        await mcp.stop()
    logged = sum(len(record.getMessage()) for record in caplog.records if record.name == "toolsift.mcp.stderr")
    assert logged < 500_000, f"{logged:,} characters logged for 20 MB of stderr"
    assert drops["stderr_lines"] > 50_000 and drops["stderr_bytes"] > 15_000_000, drops
