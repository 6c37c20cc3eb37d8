"""What an MCP server says beside its answers (log messages, stderr) reaches the gateway's log as bounded one-line
records, within a budget per server, and what is dropped is counted: never Rich on the event loop, never a line
the size of what the server sent."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from fastmcp import Context, FastMCP
from mcp_types import LoggingMessageNotificationParams
from rich.logging import RichHandler

from app.mcp.client.chatter import Chatter
from app.mcp.client.server_log import (
    LOG_BURST,
    LOG_RATE,
    LOG_TEXT_CHARS,
    SDK_RECORDS,
    ServerLog,
    preview,
    quiet_sdk_logs,
)
from app.mcp.client.stderr import LINE_CHARS, STDERR_BURST, ServerOutput
from app.server.observability import JsonFormatter, TextFormatter
from tests.support import make_config

pytestmark = pytest.mark.filterwarnings("ignore:The logging capability is deprecated")  # servers that log


def chatty_server() -> FastMCP:
    server = FastMCP("chatty")

    @server.tool
    async def shout(ctx: Context, size: int = 65536, count: int = 1) -> str:
        """Send `count` log messages of `size` characters."""
        for i in range(count):
            await ctx.info(f"message {i}: " + "1 a" * (size // 3))
        return f"sent {count}"

    return server


@pytest.fixture
def rich_emits(monkeypatch: pytest.MonkeyPatch) -> list[logging.LogRecord]:
    """Every record a Rich handler was asked to write (fastmcp's default log handler goes there)."""
    seen: list[logging.LogRecord] = []
    monkeypatch.setattr(RichHandler, "emit", lambda self, record: seen.append(record))
    return seen


def server_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "toolsift.mcp.server"]


async def test_a_64_kb_log_message_is_one_bounded_line_and_never_reaches_rich(
    gateway_factory: Any, rich_emits: list[logging.LogRecord], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    config = make_config(mcpServers={"chatty": {"command": "unused"}}, tool_sets={})
    _, gateway = await gateway_factory(config, targets={"chatty": chatty_server()})
    assert await gateway.mcp.call_tool("chatty", "shout", {"size": 65536, "count": 4}) == ("sent 4", False)
    assert not rich_emits, "a server's log message went through Rich"
    records = server_records(caplog)
    assert len(records) == 4
    for number, record in enumerate(records):
        line = TextFormatter().format(record)
        assert "\n" not in line and len(line) < LOG_TEXT_CHARS + 300, len(line)
        assert "server=chatty" in line and f"message {number}: 1 a1 a" in line
        entry = json.loads(JsonFormatter().format(record))
        assert entry["level"] == "info" and entry["server"] == "chatty" and entry["event"] == "mcp server log"
        assert len(entry["text"]) <= LOG_TEXT_CHARS + 3


async def test_a_servers_log_messages_past_its_budget_are_counted_not_logged(
    gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    config = make_config(mcpServers={"chatty": {"command": "unused"}}, tool_sets={})
    _, gateway = await gateway_factory(config, targets={"chatty": chatty_server()})
    assert await gateway.mcp.call_tool("chatty", "shout", {"size": 30, "count": 400}) == ("sent 400", False)
    logged = len(server_records(caplog))
    assert LOG_BURST <= logged < 400
    dropped = gateway.metrics.registry.get_sample_value(
        "toolsift_mcp_output_dropped_total", {"server": "chatty", "kind": "log_messages"}
    )
    assert dropped == 400 - logged


async def test_the_line_after_drops_says_how_many() -> None:
    now = [0.0]
    drops: list[tuple[str, str, int]] = []
    handler = ServerLog("noisy", lambda *drop: drops.append(drop))
    handler.chatter = Chatter(1.0, 2, clock=lambda: now[0])
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logger = logging.getLogger("toolsift.mcp.server")
    logger.addHandler(keep)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        for _ in range(5):
            await handler(LoggingMessageNotificationParams(level="warning", data="hello"))
        now[0] = 1.0
        await handler(LoggingMessageNotificationParams(level="error", logger="db", data={"a": [1, None]}))
    finally:
        logger.removeHandler(keep)
        logger.setLevel(old_level)
    assert [record.levelno for record in records] == [logging.WARNING, logging.WARNING, logging.ERROR]
    assert drops == [("noisy", "log_messages", 1)] * 3
    assert records[-1].getMessage() == (
        'mcp server log server=noisy server_level=error server_logger="db" dropped=3 {"a": [1, null]}'
    )


def test_preview_costs_no_more_than_the_text_it_keeps() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert preview(deep, 50) == "[" * 50 + "..."
    wide = {f"k{i}": i for i in range(1_000_000)}
    text = preview(wide, 100)
    assert text.startswith('{"k0": 0, "k1": 1') and len(text) == 103
    assert preview({"a": "x" * 10_000}, 20) == '{"a": "xxxxxxxxxxxxx...'
    assert preview("y" * 5000, 10) == "y" * 10 + "..."
    assert preview({"n": 1, "b": True, "f": 1.5, "none": None}, 100) == '{"n": 1, "b": true, "f": 1.5, "none": null}'


async def test_stderr_is_logged_cut_and_within_a_budget_the_rest_counted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    drops: dict[str, int] = {}

    def dropped(server: str, kind: str, count: int) -> None:
        drops[kind] = drops.get(kind, 0) + count

    output = ServerOutput("noisy", dropped)
    writer = output.open()
    lines = 20_000
    chunk = "e" * 199 + "\n"

    def write() -> None:
        writer.write("z" * 1_000_000 + "\n")  # one line of a megabyte
        for _ in range(lines):
            writer.write(chunk)
        writer.write("last words\n")
        writer.flush()

    await asyncio.to_thread(write)  # ends once the loop has read all but the pipe's buffer
    output.drain_now()
    output.close()
    records = [record for record in caplog.records if record.name == "toolsift.mcp.stderr"]
    logged = sum(len(record.getMessage()) for record in records)
    assert STDERR_BURST <= len(records) < STDERR_BURST + 50
    assert all(len(record.getMessage()) < LINE_CHARS + 100 for record in records)
    assert logged < 100_000, f"{logged:,} characters logged for 5 MB of stderr"
    assert drops["stderr_lines"] == lines + 2 - len(records)
    assert drops["stderr_bytes"] > 4_000_000
    assert output.last() == "last words", "the tail keeps the last lines whatever the budget"


def test_the_chatter_budget_refills_with_time() -> None:
    now = [0.0]
    chatter = Chatter(2.0, 3, clock=lambda: now[0])
    assert [chatter.allow() for _ in range(5)] == [True, True, True, False, False]
    now[0] = 1.0
    assert [chatter.allow() for _ in range(3)] == [True, True, False]


def test_the_sdks_records_of_bad_messages_are_cut_and_within_a_budget(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK logs a warning (with a traceback) per notification that fails validation, and names an unknown SSE
    event type in its line: a server sending thousands of them fills no log."""
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(SDK_RECORDS, "chatter", Chatter(LOG_RATE, LOG_BURST))  # a budget of its own
    quiet_sdk_logs()
    quiet_sdk_logs()  # once per process, however many gateways
    for index in range(1000):
        logging.getLogger("client").warning("Failed to validate notification: %s", f"{index} " + "m" * 100_000)
        logging.getLogger("mcp.client.streamable_http").warning(f"Unknown SSE event: {'e' * 100_000}")
    records = [record for record in caplog.records if record.name in ("client", "mcp.client.streamable_http")]
    assert LOG_BURST <= len(records) < LOG_BURST + 20
    assert all(len(record.getMessage()) < LOG_TEXT_CHARS + 100 for record in records)
    assert len(logging.getLogger("client").filters) == 1
