"""An MCP server that tells which credential it was given: a fingerprint (never the value, which the gateway
redacts) of its `ECHO_TOKEN` variable over stdio, or of the `X-Token` header it was sent over HTTP, and its process
id. `python echo_identity.py` serves stdio; `python echo_identity.py PORT` serves streamable HTTP at /mcp."""

from __future__ import annotations

import hashlib
import os
import sys

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers

mcp = FastMCP("echo")


def fingerprint(value: str | None) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:12] if value else "none"


@mcp.tool
def whoami() -> str:
    """Which credential this server was given, and which process answers."""
    if len(sys.argv) > 1:
        token = get_http_headers(include_all=True).get("x-token")
        authorization = get_http_headers(include_all=True).get("authorization")
        return f"token={fingerprint(token)} authorization={fingerprint(authorization)} pid={os.getpid()}"
    return f"token={fingerprint(os.environ.get('ECHO_TOKEN'))} pid={os.getpid()}"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False, log_level="WARNING")
    else:
        mcp.run(show_banner=False, log_level="WARNING")
