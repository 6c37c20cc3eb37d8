"""One stdio server run as `instances` processes: calls spread over them, each restarted on its own.

A stdio server is one process, and many serve their calls one at a time (a synchronous tool blocks it), so under
load every call queues behind the others. A pool runs several processes of the same server, each one an ordinary
connection (its own handshake, liveness ping, stderr and reconnect with backoff, so one that dies is restarted
alone while the others serve). A call goes to the least busy instance that is up, ties taken in turn; an instance
whose process has exited gets none. The tools are listed once for the catalog: from the first instance that is up,
since every instance is the same program.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

import mcp_types

from app.mcp.client.state import ServerState, ServerUnavailable


class Member(Protocol):
    """What a pool needs of one connection (app/mcp/client/connection.py's ServerConnection)."""

    name: str
    transport_name: str
    state: ServerState
    error: str | None
    tools: list[mcp_types.Tool]
    notes: list[str]
    tool_timeout: float
    output: Any

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult: ...

    def stderr(self) -> list[str]: ...


class ServerPool:
    """Several connections to one server, seen from outside as one connection."""

    def __init__(self, name: str, members: Sequence[Member]) -> None:
        if not members:
            raise ValueError("a pool needs at least one instance")
        self.name = name
        self.members = list(members)
        self.transport_name = members[0].transport_name
        self.tool_timeout = members[0].tool_timeout
        self.busy = [0] * len(members)  # calls in flight, per instance
        self._turn = 0  # where the next tie is broken

    @property
    def state(self) -> ServerState:
        states = {member.state for member in self.members}
        for state in (ServerState.UP, ServerState.CONNECTING, ServerState.DOWN):
            if state in states:
                return state
        return ServerState.DISABLED

    @property
    def error(self) -> str | None:
        """While no instance is up: the first instance's error (they run the same program)."""
        if self.state is ServerState.UP:
            return None
        return next((member.error for member in self.members if member.error), None)

    @property
    def tools(self) -> list[mcp_types.Tool]:
        lister = self._lister()
        return lister.tools if lister is not None else []

    @property
    def notes(self) -> list[str]:
        lister = self._lister()
        return lister.notes if lister is not None else []

    def _lister(self) -> Member | None:
        return next((member for member in self.members if member.state is ServerState.UP), None)

    async def start(self) -> None:
        await asyncio.gather(*(member.start() for member in self.members))

    async def stop(self) -> None:
        await asyncio.gather(*(member.stop() for member in self.members))

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        index = self._pick()
        if index is None:
            raise ServerUnavailable(
                f"MCP server '{self.name}' is {self.state.value}" + (f": {self.error}" if self.error else "")
            )
        self.busy[index] += 1
        try:
            return await self.members[index].call(tool, arguments)
        finally:
            self.busy[index] -= 1

    def _pick(self) -> int | None:
        """The least busy instance that can serve, ties taken in turn from the one after the last chosen."""
        count = len(self.members)
        order = [(self._turn + step) % count for step in range(count)]
        serving = [index for index in order if _serving(self.members[index])]
        if not serving:
            return None
        chosen = min(serving, key=lambda index: self.busy[index])  # min keeps the first of equals: the turn order
        self._turn = (chosen + 1) % count
        return chosen

    def stderr(self) -> list[str]:
        """The last words of the first instance that is down and said something."""
        for member in self.members:
            if member.state is ServerState.DOWN:
                lines = member.stderr()
                if lines:
                    return lines
        return []

    def instances(self) -> list[dict[str, Any]]:
        """Each instance's state, process id and calls in flight, for /healthz."""
        return [
            {
                "state": member.state.value,
                "pid": member.output.pid if member.output is not None else None,
                "busy": busy,
                **({"error": member.error} if member.error else {}),
            }
            for member, busy in zip(self.members, self.busy, strict=True)
        ]


def _serving(member: Member) -> bool:
    """Up, and its process (when there is one to watch) still running."""
    if member.state is not ServerState.UP:
        return False
    return member.output is None or not member.output.finished
