"""A hostile MCP server's schema `pattern` through the MCP front's proxy `call_tool`: checked on RE2, so a
catastrophic-backtracking pattern answers at once instead of holding the gateway (on a backtracking engine,
2^60 steps), and a pattern RE2 cannot run is left to the server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.support import ROOT
from tests.support.mcp import text

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
HOSTILE = ROOT / "tests" / "servers" / "hostile_schema.py"


def proxy_front(tmp_path: Path) -> Client[Any]:
    config = tmp_path / "config.json"
    server = {"command": "python", "args": [str(HOSTILE)], "defer_loading": True}
    config.write_text(json.dumps({"mcpServers": {"hostile": server}}))
    command = ["mcp", "--stdio", "--config", str(config), "--mode", "proxy"]
    # the whole environment, PYTHONPATH included: the stdio client passes only a few variables by default
    transport = StdioTransport(TOOLSIFT, command, env=dict(os.environ), cwd=str(ROOT))
    return Client(transport, timeout=30, init_timeout=60)


async def test_a_backtracking_pattern_is_checked_in_linear_time(tmp_path: Path) -> None:
    async with proxy_front(tmp_path) as client:
        hostile = {"name": "hostile__lookup_code", "arguments": {"code": "a" * 60 + "!"}}
        refused = await client.call_tool_mcp("call_tool", hostile)
        assert refused.is_error and "invalid arguments for hostile__lookup_code at code" in text(refused)
        assert "does not match" in text(refused) and "Nothing was run" in text(refused)
        # the lookahead RE2 cannot compile is not checked here (the server has the last word): the call runs
        ran = await client.call_tool_mcp("call_tool", {**hostile, "arguments": {"code": "aaa", "suffix": "xy"}})
        assert not ran.is_error and "found aaaxy" in text(ran)
