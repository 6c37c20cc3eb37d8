"""An MCP server (stdio) for bench/cache.py: real tool definitions from bench/data's tool-retrieval data, each
answering every call with a short fixed text that names the tool and its arguments.

    CATALOG=catalog.json python bench/cache_catalog.py   # catalog.json: [{"name", "description", "input_schema"}]
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import Tool, ToolResult

server = FastMCP("catalog")


class CatalogTool(Tool):
    """A listed tool whose call returns what it was asked, as a real tool's short answer would."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        text = f"{self.name}: done for {json.dumps(arguments, sort_keys=True)}; 3 results, status ok."
        return ToolResult(content=text)


for entry in json.loads(Path(os.environ["CATALOG"]).read_text()):
    tool = CatalogTool(name=entry["name"], description=entry["description"], parameters=entry["input_schema"])
    server._local_provider._components[tool.key] = tool  # fastmcp's add_tool compares each with all before it


if __name__ == "__main__":
    server.run(show_banner=False)
