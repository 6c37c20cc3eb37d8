"""`run_task` never hands a configured secret back: its report (text and structured copy) passes the MCP front's
one redaction point, over stdio and over `/mcp`, as the chat fronts' errors do."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.support import ROOT, free_port, served_gateway
from tests.support.mcp import mcp_client

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
USER_SECRET, QUERY_SECRET = "urlpass-5d1c9e7a3b", "querykey-8f2a6c4e1d"


def config_for(tmp: Path, **extra: Any) -> Path:
    # Nothing listens on the port: the provider's error names its URL, credentials and all.
    base_url = f"http://user:{USER_SECRET}@127.0.0.1:{free_port()}/v1?api_key={QUERY_SECRET}"
    config = {
        "providers": {"up": {"base_url": base_url, "api_key": "sk-run-task-7c1d", "max_retries": 0}},
        "models": {"worker": {"provider": "up", "model": "m"}},
        "mcpServers": {},
        "tool_discovery": {"semantic": {"enabled": False}},
        "mcp_front": {"mode": "proxy", "run_task": {"model": "worker"}},
        **extra,
    }
    path = tmp / "config.json"
    path.write_text(json.dumps(config))
    return path


def check(result: mcp_types.CallToolResult) -> None:
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    assert result.isError and "unreachable" in block.text, block.text
    assert "[redacted]" in block.text
    everything = block.text + json.dumps(result.structuredContent)
    assert USER_SECRET not in everything and QUERY_SECRET not in everything, everything


async def test_run_task_over_stdio_redacts_the_providers_credentials(tmp_path: Path) -> None:
    transport = StdioTransport(TOOLSIFT, ["mcp", "--stdio", "--config", str(config_for(tmp_path))], cwd=str(ROOT))
    async with Client(transport, timeout=60, init_timeout=60) as client:
        check(await client.call_tool_mcp("run_task", {"task": "anything"}))


async def test_run_task_over_http_redacts_the_providers_credentials(tmp_path: Path) -> None:
    config = config_for(tmp_path, auth={"api_keys": ["key-erin"]})
    with served_gateway(config, free_port()) as base:
        async with mcp_client(f"{base}/mcp", "key-erin") as client:
            check(await client.call_tool_mcp("run_task", {"task": "anything"}))
