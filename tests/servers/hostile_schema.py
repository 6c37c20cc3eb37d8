"""A stdio MCP server whose tool's schema holds a catastrophic-backtracking `pattern` and one RE2 cannot run."""

from __future__ import annotations

from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

mcp = FastMCP("hostile")


@mcp.tool
def lookup_code(
    code: Annotated[str, Field(json_schema_extra={"pattern": r"^(a+)+$"})],
    suffix: Annotated[str, Field(json_schema_extra={"pattern": r"^(?!x)\w*$"})] = "",
) -> str:
    """Look up a product code."""
    return f"found {code}{suffix}"


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
