"""A logged value cannot forge a log line: control characters in anything a record carries (a model name from a
body, a header, a library's message) are escaped, so one record is one line of the text log."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from app.common.logs import escape_controls
from app.server.observability import TextFormatter
from tests.support import Upstream, chat_body

FORGED = "2026-11-25 12:00:00,000 INFO toolsift.auth admin login ok"


@pytest.fixture
def text_log() -> Iterator[io.StringIO]:
    """The root logger's lines in the gateway's text format, as `toolsift serve` writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


async def test_a_model_name_with_a_newline_stays_on_its_request_line(
    upstream: Upstream, gateway_factory: Any, text_log: io.StringIO
) -> None:
    client, _ = await gateway_factory()
    response = await client.post("/v1/chat/completions", json=chat_body("hi", model=f"gpt\n{FORGED}\r\x1b[2K"))
    assert response.status_code == 200, response.text  # an unknown name goes to the default provider
    lines = text_log.getvalue().splitlines()
    assert lines and not any(line.startswith(FORGED) for line in lines)
    request_line = next(line for line in lines if "model=gpt" in line)
    assert f"model=gpt\\n{FORGED}\\r\\x1b[2K" in request_line


def test_any_logger_and_any_argument_is_escaped_but_a_traceback_keeps_its_lines(text_log: io.StringIO) -> None:
    from app.common.logs import install_log_hooks

    install_log_hooks()
    logging.getLogger("some.library").warning("peer said %s", f"bye\n{FORGED}\u2028\x85")
    try:
        raise ValueError("inner")
    except ValueError:
        logging.getLogger("toolsift.x").exception("failed for %r", "x")
    lines = text_log.getvalue().splitlines()
    assert lines[0].endswith(f"peer said bye\\n{FORGED}\\u2028\\x85")
    assert "Traceback (most recent call last):" in lines and lines[-1] == "ValueError: inner"
    assert escape_controls("tab\there") == "tab\\there" and escape_controls("a\nb", keep_newlines=True) == "a\nb"


def test_fastmcps_records_take_the_gateways_handler_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """fastmcp gives its logger Rich handlers of its own (multi-line blocks, a highlighter quadratic in a long
    run, on the event loop): under `toolsift serve` its records are one JSON line like every library's."""
    from app.server.observability import configure_logging

    root, library = logging.getLogger(), logging.getLogger("fastmcp")
    saved = (root.handlers[:], root.level, library.handlers[:], library.propagate)
    try:
        configure_logging("info", "json")
        logging.getLogger("fastmcp.client.from_server").warning("Received %s", "1" * 5000 + "\nforged line")
        lines = capsys.readouterr().err.splitlines()
    finally:
        root.handlers[:], library.handlers[:] = saved[0], saved[2]
        root.setLevel(saved[1])
        library.propagate = saved[3]
    assert len(lines) == 1, lines[:3]
    assert json.loads(lines[0])["logger"] == "fastmcp.client.from_server"


@pytest.mark.parametrize(("level", "shown"), [("info", False), ("debug", True)])
def test_http_clients_request_lines_show_at_debug_only(
    capsys: pytest.CaptureFixture[str], level: str, shown: bool
) -> None:
    """A remote MCP server costs several HTTP requests a call, each a line from the MCP library's HTTP client
    (`httpx2`), and every MCP session the front opens a line too: at INFO they buried the gateway's own lines."""
    from app.server.observability import CHATTY_LOGGERS, configure_logging

    root = logging.getLogger()
    saved = (root.handlers[:], root.level, {name: logging.getLogger(name).level for name in CHATTY_LOGGERS})
    try:
        configure_logging(level, "text")
        logging.getLogger("httpx2").info('HTTP Request: POST http://127.0.0.1:1/mcp "HTTP/1.1 200 OK"')
        logging.getLogger("mcp.server.streamable_http_manager").info("Created new transport with session ID: x")
        logging.getLogger("toolsift.http").info("request id=req_1 status=200")
        lines = capsys.readouterr().err.splitlines()
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        for name, value in saved[2].items():
            logging.getLogger(name).setLevel(value)
    assert any("request id=req_1" in line for line in lines)
    assert any("HTTP Request: POST" in line for line in lines) is shown
    assert any("Created new transport" in line for line in lines) is shown
