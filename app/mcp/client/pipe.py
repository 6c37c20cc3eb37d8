"""The stdio transport: a server process and its JSON-RPC lines, read within a size bound, large ones parsed off the
event loop.

The MCP SDK's stdio client keeps any line a server writes, however long, and parses every line on the event loop: a
server listing 10,000 tools (4.7 MB on one line) held the loop for about 0.3 s per listing, a storm of
`list_changed` held it again each time, and a server that never writes a newline grows the gateway's memory without
end. Here a line over `max_message_bytes` ends the connection with that reason (the server is reported down and
reconnected as after any loss); a line over LARGE_LINE_BYTES is parsed in the worker pool, in pieces
(app/mcp/client/large_messages.py); smaller lines, every call and its answer in practice, are parsed where they
arrive, as the SDK does. Spawning and stopping follow the SDK's policy (own process group; stdin closed, then
SIGTERM and SIGKILL to the group) with its own helpers; on Windows the SDK's client is used as it is.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, TextIO

import anyio
import anyio.abc
import mcp_types
from fastmcp import Client
from fastmcp.client.transports import ClientTransport, StdioTransport
from fastmcp.client.transports.base import TransportOptions
from mcp import ClientSession
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from app.mcp.client.large_messages import LARGE_LINE_BYTES, LISTING_LINE_BYTES, Listings, parse_line, too_large

MAX_PAGES = 250  # fastmcp's limit on a paged listing
STOP_GRACE_SECONDS = 2.0  # after stdin closes, before SIGTERM; and again before SIGKILL


class MessageTooLarge(Exception):
    """A server wrote a line longer than the limit: the connection ends with this as its reason."""


class PipeTransport(ClientTransport):
    """A stdio MCP server, one process per connection (closed with it: no orphans, a fresh one on reconnect)."""

    def __init__(
        self,
        command: str,
        args: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        errlog: TextIO | None,
        max_message_bytes: int,
        on_spawn: Callable[[anyio.abc.Process], None] | None = None,
    ) -> None:
        self.command, self.args, self.env, self.cwd = command, args, env, cwd
        self.errlog = errlog
        self.max_message_bytes = max_message_bytes
        self.on_spawn = on_spawn
        self.closed_because: str | None = None  # why the transport ended the last connection, when it did
        self.listings = Listings()

    @contextlib.asynccontextmanager
    async def connect_session(
        self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any
    ) -> AsyncGenerator[ClientSession, None]:
        if sys.platform == "win32":  # pragma: no cover - the SDK's job objects; lines unbounded there
            sdk = StdioTransport(self.command, self.args, env=self.env, cwd=self.cwd, keep_alive=False)
            async with sdk.connect_session(transport_options=transport_options, **session_kwargs) as session:
                yield session
            return
        options = transport_options or TransportOptions()
        async with self._streams() as (read, write), options.session_class(read, write, **session_kwargs) as session:
            yield session

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[tuple[Any, Any]]:
        self.closed_because = None
        process = await anyio.open_process(
            [self.command, *self.args],
            env=get_default_environment() | self.env,
            cwd=self.cwd,
            stderr=self.errlog if self.errlog is not None else sys.stderr,
            start_new_session=True,  # its own group: stopping it stops what it started
        )
        if self.on_spawn is not None:
            self.on_spawn(process)
        to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write, from_session = anyio.create_memory_object_stream[SessionMessage](0)

        async def read_lines() -> None:
            assert process.stdout is not None
            try:
                async with to_session:
                    async for line in lines(process.stdout, self.max_message_bytes):
                        await to_session.send(await self._parse(line))
            except MessageTooLarge as exc:
                self.closed_because = str(exc)  # the session sees the stream end; the connection names this
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass  # the session or the process is gone: the session sees the stream end
            # A server still writing could not exit on closed stdin: read on, discarding, until it is stopped.
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for _ in process.stdout:
                    pass

        async def write_lines() -> None:
            assert process.stdin is not None
            try:
                async with from_session:
                    async for outgoing in from_session:
                        request = outgoing.message
                        if isinstance(request, mcp_types.JSONRPCRequest) and request.method == "tools/list":
                            self.listings.asked(request.id)
                        data = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await process.stdin.send(data.encode() + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await to_session.aclose()  # a request must not wait for an answer that cannot come

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            tasks.start_soon(write_lines)
            try:
                yield read, write
            finally:
                with anyio.CancelScope(shield=True):
                    await read.aclose()  # the reader stops delivering and drains, so the server can exit
                    await write.aclose()  # the writer ends after what it was given
                    await _stop(process)
                tasks.cancel_scope.cancel()

    async def _parse(self, line: bytes) -> SessionMessage | Exception:
        # While a listing is awaited, a line of a few dozen tools or more goes to the pool too: the SDK's checks of
        # a listing cost about 50 microseconds a tool on the loop, ten times the parse.
        listing = bool(self.listings.pending) and len(line) > LISTING_LINE_BYTES
        large = listing or len(line) > LARGE_LINE_BYTES
        message = (await self.listings.parse(line)).message if large else parse_line(line)
        answer = message.message if isinstance(message, SessionMessage) else None
        if isinstance(answer, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            self.listings.answered(answer.id)
        return message


async def lines(stream: anyio.abc.ByteReceiveStream, limit: int) -> AsyncIterator[bytes]:
    """Newline-ended lines of `stream`, none longer than `limit` bytes (MessageTooLarge)."""
    pending: list[bytes] = []
    size = 0
    async for chunk in stream:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            size += end - start
            if size > limit:
                raise MessageTooLarge(too_large(limit))
            pending.append(chunk[start:end])
            line = b"".join(pending)
            pending, size, start = [], 0, end + 1
            if line.strip():
                yield line
        size += len(chunk) - start
        if size > limit:
            raise MessageTooLarge(too_large(limit))
        pending.append(chunk[start:])


async def _stop(process: anyio.abc.Process) -> None:
    """The SDK's shutdown: close stdin and wait, then SIGTERM the group and wait, then SIGKILL it."""
    from mcp.os.posix.utilities import terminate_posix_process_tree

    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, STOP_GRACE_SECONDS):
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            await terminate_posix_process_tree(process, STOP_GRACE_SECONDS)  # type: ignore[arg-type]
        await _exited(process, STOP_GRACE_SECONDS)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()


async def _exited(process: anyio.abc.Process, timeout: float) -> bool:
    """Whether the process ended within `timeout` (polled: `wait()` also waits for pipes a child may hold open)."""
    deadline = anyio.current_time() + timeout
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(0.05)
    return True


async def list_tools(client: Client[Any], transport: Any) -> list[mcp_types.Tool]:
    """Every page of the server's tools (as fastmcp's `list_tools`), a large page's tools taken from the
    transport's `listings`, where they were parsed and validated off the loop (a stdio one's, or a remote one's
    `bounds`)."""
    listings: Listings | None = getattr(getattr(transport, "bounds", transport), "listings", None)
    if listings is None:
        return await client.list_tools()
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await client.list_tools_mcp(cursor=cursor)
        listed = listings.take_listed()
        tools.extend(page.tools if listed is None else listed)
        cursor = page.next_cursor
        if cursor is None or cursor in seen:  # a server that repeats a cursor would page forever
            break
        seen.add(cursor)
    return tools
