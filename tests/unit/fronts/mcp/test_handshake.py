"""`toolsift mcp --stdio` answers `initialize` before it imports the gateway: its early answer must be the one the
front's own server gives, for every protocol version a client may ask for."""

from __future__ import annotations

import mcp_types.version
import pytest
from fastmcp import Client

from app.config import parse_config
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.fronts.mcp import handshake
from app.fronts.mcp.server import McpFront


def test_the_written_out_versions_are_the_sdks() -> None:
    assert handshake.HANDSHAKE_PROTOCOL_VERSIONS == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS
    assert handshake.LATEST_HANDSHAKE_VERSION == mcp_types.version.LATEST_HANDSHAKE_VERSION


def test_a_version_is_negotiated_as_the_sdk_does() -> None:
    for version in mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS:
        assert handshake.initialize_result({"protocolVersion": version})["protocolVersion"] == version
    latest = mcp_types.version.LATEST_HANDSHAKE_VERSION
    assert handshake.initialize_result({"protocolVersion": "1999-01-01"})["protocolVersion"] == latest
    assert handshake.initialize_result(None)["protocolVersion"] == latest


@pytest.mark.parametrize("mode", ["lazy", "proxy", "full"])
async def test_the_early_answer_is_the_servers_own(mode: str) -> None:
    gateway = Gateway(parse_config({"mcpServers": {}}, environ={}))
    front = McpFront(Engine(gateway), mode)  # type: ignore[arg-type]
    async with Client(front.server, mode="legacy") as client:
        own = client.initialize_result
    assert own is not None
    early = handshake.initialize_result({"protocolVersion": own.protocol_version})
    assert early == own.model_dump(mode="json", by_alias=True, exclude_none=True)
