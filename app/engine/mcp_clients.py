"""What each MCP front client enabled, kept in the gateway's one store, so every replica behind a load balancer
agrees on a client's tool list. The MCP front names its clients (app/fronts/mcp/clients.py); the engine keeps
their views.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from app.common.identity import Identity
from app.store.base import Key, Store, StoreUnavailable, dump_json, load_json, unavailable_level

log = logging.getLogger("toolsift.mcp.front")
NAMESPACE = "mcp-client"
Client = tuple[Identity, str]  # a caller's identity and the client's id within it


@dataclass
class ClientView:
    """The fingerprint of the tool list a client last saw (to tell it its list changed) and the deferred tools it
    enabled, in the order found."""

    seen: str | None = None
    enabled: list[str] = field(default_factory=list)


class ClientStates:
    """Each client's view, one store entry a client, expiring `ttl` seconds after its last change. A store that
    cannot answer costs the client its enabled tools (it searches again), never the call."""

    def __init__(self, store: Store, ttl: float, max_tools: int) -> None:
        self.store = store
        self.ttl = ttl
        self.max_tools = max_tools
        # One lock per client being changed (gone with its last holder): a session's concurrent calls take turns
        # at reading, changing and writing its view, so none writes back a view read before another's change.
        self._changing: weakref.WeakValueDictionary[Key, asyncio.Lock] = weakref.WeakValueDictionary()

    async def update(self, client: Client, change: Callable[[ClientView], bool]) -> ClientView:
        """Read the client's view, `change` it, and write it when `change` says it changed, with no other update
        of this client in this process in between (a store answers each call on its own: without this, two
        concurrent searches of one session read the same view, and the second write lost the first's tools)."""
        key = _key(client)
        lock = self._changing.get(key)
        if lock is None:
            lock = self._changing[key] = asyncio.Lock()
        async with lock:
            view = await self.get(client)
            if change(view):
                await self.put(client, view)
        return view

    async def get(self, client: Client) -> ClientView:
        try:
            raw = await self.store.get(_key(client))
        except StoreUnavailable as exc:
            log.log(unavailable_level(exc), "MCP client state unavailable: %s", exc)
            return ClientView()
        if raw is None:
            return ClientView()
        found = load_json(raw)
        return ClientView(found.get("seen"), list(found.get("enabled", [])))

    async def put(self, client: Client, view: ClientView) -> None:
        enabled = view.enabled[-self.max_tools :]  # a client that keeps searching keeps its latest finds
        try:
            await self.store.put(_key(client), dump_json({"seen": view.seen, "enabled": enabled}), self.ttl)
        except StoreUnavailable as exc:
            log.log(unavailable_level(exc), "MCP client state unavailable: %s", exc)


def _key(client: Client) -> Key:
    identity, client_id = client
    return Key(NAMESPACE, identity.id, client_id)
