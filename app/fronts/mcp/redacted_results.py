"""The MCP front's exit: every tool result it sends (a backend tool's, `search_tools`', `run_task`'s record and
its structured copy) passes one redaction point, over stdio as over HTTP, so no tool of the front can return a
configured secret (an upstream key echoed in an error, a credential in a provider's URL)."""

from __future__ import annotations

from typing import Any

import mcp_types
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult

from app.common import redaction


class RedactedResults(Middleware):
    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        result = await call_next(context)
        if not isinstance(result, ToolResult) or not redaction.active():
            return result
        return ToolResult(
            content=[_redacted(block) for block in result.content],
            structured_content=redaction.redact_value(result.structured_content),
            meta=result.meta,
            is_error=result.is_error,
        )


def _redacted(block: mcp_types.ContentBlock) -> mcp_types.ContentBlock:
    if isinstance(block, mcp_types.TextContent):
        return block.model_copy(update={"text": redaction.redact(block.text)})
    return block
