"""A stdio MCP server with one tool its server marks destructive and one it does not."""

from __future__ import annotations

from fastmcp import FastMCP

mcp = FastMCP("danger")


@mcp.tool(annotations={"destructiveHint": True})
def wipe_records(table: str) -> str:
    """Delete every record of a table."""
    return f"wiped {table}"


@mcp.tool
def count_records(table: str) -> str:
    """Count the records of a table."""
    return f"{table}: 42 records"


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
