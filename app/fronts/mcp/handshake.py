"""What the MCP front says to `initialize`: its name, version, instructions and capabilities, in one place.

The front's server is built from these, and `toolsift mcp --stdio` answers `initialize` with them before the
gateway is even imported (a second's imports, which an MCP client's connect timeout counts), so this module
imports nothing heavy. A unit test holds the early answer to the server's own.
"""

from __future__ import annotations

from typing import Any

from app import toolsift_version

# The MCP SDK's (mcp_types.version), written out: importing it costs a fifth of a second (a test holds them equal).
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE_VERSION = "2025-11-25"

NAME = "toolsift"
INSTRUCTIONS = "One MCP server for many: search_tools finds and enables the tools you need."
CAPABILITIES: dict[str, Any] = {
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": False, "listChanged": True},
    "tools": {"listChanged": True},
}


def initialize_result(params: Any) -> dict[str, Any]:
    """The `initialize` result for a client's params: its protocol version when this server speaks it, else the
    latest it does, as the MCP SDK negotiates."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": {"name": NAME, "version": toolsift_version()},
        "instructions": INSTRUCTIONS,
    }
