"""Servers that act as each caller start one process per identity: one identity's slow start is its own wait.
Alice's server does not start until the test opens its gate; Bob's calls, through the served gateway's MCP front,
answer meanwhile, on a connection he opens then and on the one he has."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT, free_port, served_gateway
from tests.support.mcp import mcp_client, text, wait_for

GATED = ROOT / "tests" / "servers" / "gated_start.py"


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gate") / "open"


@pytest.fixture(scope="module")
def gateway(gate: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    def key(name: str, start_gate: str) -> dict[str, object]:
        return {"name": name, "key": f"gw-{name}", "secrets": {"START_GATE": start_gate}}

    config = {
        "mcpServers": {
            "gated": {
                "command": sys.executable,
                "args": [str(GATED)],
                "env": {"START_GATE": "${identity.START_GATE}"},
                "list_as": "lister",
            }
        },
        "auth": {"api_keys": [key("lister", ""), key("alice", str(gate)), key("bob", "")]},
    }
    path = tmp_path_factory.mktemp("isolation") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


async def _started(gateway: str, key: str) -> str:
    async with mcp_client(f"{gateway}/mcp", key) as client:
        return text(await client.call_tool_mcp("gated__started", {}))


async def test_bob_is_answered_while_alices_server_is_still_starting(gateway: str, gate: Path) -> None:
    alices = asyncio.create_task(_started(gateway, "gw-alice"))
    try:
        await wait_for(Path(f"{gate}.waiting").exists)  # Alice's server is up to its gate: her start is under way
        assert await _started(gateway, "gw-bob") == "at once", "Bob's own connection opened while Alice's started"
        assert await _started(gateway, "gw-bob") == "at once"
        assert not alices.done(), "Alice's server cannot have started: its gate is closed"
    finally:
        gate.touch()
    assert await alices == "after its gate"
