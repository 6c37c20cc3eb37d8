"""What a connection hears from its server: a changed tool list, an answer to a ping, an error that means the
server is gone, and an exception as one line for /healthz and the log; and what a call is told when there is no
connection to make it on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types
from fastmcp import Client
from fastmcp.client.messages import MessageHandler
from mcp.shared.exceptions import MCPError

from app.mcp.client.state import ServerUnavailable as ServerUnavailable


class ListChanged(MessageHandler):
    def __init__(self, on_change: Callable[[], None]) -> None:
        self._on_change = on_change

    async def on_tool_list_changed(self, message: mcp_types.ToolListChangedNotification) -> None:
        self._on_change()


async def ping(client: Client[Any]) -> None:
    """A liveness probe: any answer, even "method not found" from a server without ping, shows it alive."""
    try:
        await client.ping()
    except MCPError as exc:
        if exc.code != mcp_types.METHOD_NOT_FOUND:
            raise


def connection_gone(exc: BaseException) -> bool:
    return "connection closed" in str(exc).lower() or isinstance(exc, ConnectionError | EOFError)


def describe_exception(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]
