"""An MCP server that talks too much: long log messages, floods of log notifications within one call, and megabytes
of stderr. Over stdio; over streamable HTTP on 127.0.0.1 with `CHATTY_HTTP_PORT` (or tests/support/remote.py)."""

from __future__ import annotations

import os
import sys

from fastmcp import Context, FastMCP

mcp = FastMCP("chatty")


@mcp.tool
async def shout(ctx: Context, size: int = 65536, count: int = 1) -> str:
    """Send `count` log messages of `size` digits each (plain text: what Rich's highlighter was slowest on), then
    answer."""
    for i in range(count):
        text = f"message {i}: " + "1" * size
        await ctx.session.send_log_message(level="info", data=text, related_request_id=ctx.request_id)
    return f"sent {count}"


@mcp.tool
async def flood(ctx: Context, megabytes: int = 200, size: int = 8192) -> str:
    """Send `megabytes` of log notifications of `size` characters each within this one call, then answer."""
    text = "y" * size
    for _ in range(megabytes * 1024 * 1024 // size):
        await ctx.info(text)
    return "flooded"


@mcp.tool
def grumble(megabytes: int = 100, line: int = 200) -> str:
    """Write `megabytes` of stderr in lines of `line` characters (and one line of a megabyte), then answer."""
    sys.stderr.write("z" * (1024 * 1024) + "\n")
    chunk = ("e" * (line - 1) + "\n") * max(1, 65536 // line)
    for _ in range(megabytes * 1024 * 1024 // len(chunk)):
        sys.stderr.write(chunk)
    sys.stderr.flush()
    return "grumbled"


@mcp.tool
def echo(text: str) -> str:
    """Answer with `text`."""
    return text


if __name__ == "__main__":
    port = os.environ.get("CHATTY_HTTP_PORT")
    if port:
        mcp.run(transport="http", host="127.0.0.1", port=int(port), show_banner=False, log_level="WARNING")
    else:
        mcp.run(show_banner=False, log_level="WARNING")
