"""Servers that act as the caller: a remote server's `headers` or a stdio server's `env` may name a secret of the
calling identity (`${identity.NAME}`); such a server gets one connection (or process) per identity that uses it.

Each identity's connection opens on its first call, closes when idle for `identity_idle_seconds`, and at most
`max_identity_connections` are open at once in this process (the least recently used idle one closes to make
room). The tools the catalog shows, for the manifest and search, are those the `list_as` identity's connection
lists. Only configured secrets reach a server: never the caller's own key. An identity without a secret the
server needs gets a clear tool error; the others are not affected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from app.common.identity import ANONYMOUS, Identities, Identity
from app.config import Config, McpServerConfig
from app.config.identities import IDENTITY_REFERENCE
from app.mcp.client.state import ServerUnavailable

if TYPE_CHECKING:
    from app.mcp.client.connection import ServerConnection
    from app.mcp.client.pool import ServerPool

log = logging.getLogger("toolsift.mcp")
OPEN_ATTEMPTS = 3  # a new connection closed to make room before its caller woke up is started again, this often


class Connect(Protocol):
    """How a connection is made (ServerConnection's constructor)."""

    def __call__(
        self, name: str, config: McpServerConfig, settings: Config, on_tools: Callable[[], None], target: Any = None
    ) -> ServerConnection: ...


def connect_all(
    settings: Config,
    targets: dict[str, Any],
    changed: Callable[[], None],
    connect: Connect,
    shared: Callable[[str, McpServerConfig, Any], ServerConnection | ServerPool],
) -> tuple[dict[str, ServerConnection | ServerPool], dict[str, IdentityConnections]]:
    """Every server's connection (`shared`: its `instances`; for a server that acts as each caller, its `list_as`
    identity's, which lists the catalog's tools), and the per-identity connections of those servers."""
    identities = Identities(settings.auth)
    connections: dict[str, ServerConnection | ServerPool] = {}
    per_identity: dict[str, IdentityConnections] = {}
    for name, server in settings.mcp_servers.items():
        target = targets.get(name)
        if not server.identity_secrets or target is not None:  # an in-process server is one server for all
            connections[name] = shared(name, server, target)
            continue
        list_as = lister(server, identities)
        listing = connect(name, as_identity(server, list_as or ANONYMOUS), settings, changed)
        connections[name] = listing

        def own(config: McpServerConfig, name: str = name) -> ServerConnection:
            return connect(name, config, settings, _unlisted)

        per_identity[name] = IdentityConnections(name, server, listing, list_as, own)
    return connections, per_identity


def _unlisted() -> None:
    """An identity's own connection: what it lists is not the catalog's (the `list_as` connection's is)."""


def as_identity(config: McpServerConfig, identity: Identity) -> McpServerConfig:
    """The server's config with `identity`'s secrets in its headers and env (a secret it lacks: empty)."""

    def filled(value: str) -> str:
        return IDENTITY_REFERENCE.sub(lambda match: identity.secrets.get(match.group(1), ""), value)

    headers = {name: filled(value) for name, value in config.headers.items()}
    env = {name: filled(value) for name, value in config.env.items()}
    return config.model_copy(update={"headers": headers, "env": env})


def lister(config: McpServerConfig, identities: Identities) -> Identity | None:
    """Whose connection lists the server's tools: `list_as`, else the first identity with every secret it needs."""
    if config.list_as is not None:
        return identities.get(config.list_as)
    needed = set(config.identity_secrets)
    return next((identity for identity in identities.named() if needed <= set(identity.secrets)), None)


class _Open:
    __slots__ = ("active", "connection", "used")

    def __init__(self, connection: ServerConnection) -> None:
        self.connection = connection
        self.used = time.monotonic()
        self.active = 0


class IdentityConnections:
    """The per-identity connections of one server; `listing` is the `list_as` identity's, which the catalog reads."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        listing: ServerConnection,
        list_as: Identity | None,
        connect: Callable[[McpServerConfig], ServerConnection],
    ) -> None:
        self.name = name
        self.config = config
        self.listing = listing
        self.list_as = list_as
        self.needed = config.identity_secrets
        self._connect = connect
        self._open: dict[str, _Open] = {}
        self._starting: dict[str, asyncio.Task[_Open]] = {}  # identity -> its connection's start under way
        self._reaper: asyncio.Task[None] | None = None

    def missing(self, identity: Identity) -> list[str]:
        return [secret for secret in self.needed if secret not in identity.secrets]

    @contextlib.asynccontextmanager
    async def use(self, identity: Identity) -> AsyncIterator[ServerConnection]:
        """The identity's connection for one call, opened if need be; `ServerUnavailable` when it cannot have one."""
        missing = self.missing(identity)
        if missing:
            raise ServerUnavailable(
                f"MCP server '{self.name}' acts as each caller and needs this key's secret "
                f"{', '.join(missing)} (its identity's `secrets` in auth.api_keys), which identity {identity.id!r} "
                "does not have"
            )
        if self.list_as is not None and identity.id == self.list_as.id:
            yield self.listing
            return
        entry = await self._entry(identity)
        entry.active += 1
        try:
            yield entry.connection
        finally:
            entry.active -= 1
            entry.used = time.monotonic()

    async def _entry(self, identity: Identity) -> _Open:
        """The identity's open connection, or its start (begun here, or joined when one is under way). No lock is
        held across a start: another identity's calls, on open connections or new ones, never wait for it."""
        for _ in range(OPEN_ATTEMPTS):
            found = self._open.get(identity.id)
            if found is None:
                starting = self._starting.get(identity.id) or self._begin(identity)
                found = await asyncio.shield(starting)  # a caller that leaves does not cancel the others' start
            if self._open.get(identity.id) is found:  # not closed to make room while this caller woke up
                return found
        raise self._busy()

    def _begin(self, identity: Identity) -> asyncio.Task[_Open]:
        """Start the identity's connection in a task of its own, in a slot taken now (closing the least recently
        used idle connection when every slot is taken)."""
        if len(self._open) + len(self._starting) >= self.config.max_identity_connections:
            idle = [(entry.used, key) for key, entry in self._open.items() if not entry.active]
            if not idle:
                raise self._busy()
            evicted = min(idle)[1]
            closing: _Open | None = self._open.pop(evicted)
        else:
            evicted, closing = "", None
        task = asyncio.get_running_loop().create_task(
            self._start(identity, evicted, closing), name=f"mcp:{self.name}:{identity.id}:start"
        )
        task.add_done_callback(_retrieved)
        self._starting[identity.id] = task
        return task

    async def _start(self, identity: Identity, evicted: str, closing: _Open | None) -> _Open:
        try:
            if closing is not None:
                await self._stopped(evicted, closing)
            connection = self._connect(as_identity(self.config, identity))
            try:
                await connection.start()
            except BaseException:
                await connection.stop()
                raise
            found = self._open[identity.id] = _Open(connection)
        finally:
            self._starting.pop(identity.id, None)
        log.info("mcp identity connection server=%s identity=%s open=%d", self.name, identity.id, len(self._open))
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap(), name=f"mcp:{self.name}:idle")
        return found

    def _busy(self) -> ServerUnavailable:
        return ServerUnavailable(
            f"MCP server '{self.name}' has {self.config.max_identity_connections} identities' connections "
            "busy (max_identity_connections); try again shortly"
        )

    async def _reap(self) -> None:
        """Close the connections idle longer than `identity_idle_seconds`, until none is open."""
        idle_seconds = self.config.identity_idle_seconds
        while self._open:
            await asyncio.sleep(min(idle_seconds / 4, 30.0))
            now = time.monotonic()
            for key, entry in list(self._open.items()):
                if not entry.active and now - entry.used >= idle_seconds:
                    await self._close(key)

    async def _close(self, key: str) -> None:
        entry = self._open.pop(key, None)
        if entry is not None:
            await self._stopped(key, entry)

    async def _stopped(self, key: str, entry: _Open) -> None:
        await entry.connection.stop()
        log.info("mcp identity connection closed server=%s identity=%s", self.name, key)

    def opened(self) -> list[str]:
        return sorted(self._open)

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        starting = list(self._starting.values())
        for task in starting:
            task.cancel()
        await asyncio.gather(*starting, return_exceptions=True)
        for key in list(self._open):
            await self._close(key)


def _retrieved(task: asyncio.Task[_Open]) -> None:
    """A start whose callers all left: its failure is theirs, not an unhandled task error."""
    if not task.cancelled():
        task.exception()
