"""Servers that act as each caller: whose connection lists the tools, each identity's own config, and the bound
on identities' connections open at once (the least recently used idle one closes to make room)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.common.identity import Identities, Identity
from app.config import ConfigError, McpServerConfig, parse_config
from app.mcp.client.per_identity import IdentityConnections, as_identity, lister
from app.mcp.client.state import ServerUnavailable

SERVER = {"url": "http://mcp.test/mcp", "headers": {"Authorization": "Bearer ${identity.GH}", "X-Static": "s"}}


def _config(server: dict[str, Any], *keys: dict[str, Any]) -> Any:
    return parse_config({"mcpServers": {"gh": server}, "auth": {"api_keys": list(keys)}}, environ={})


def test_the_first_identity_with_every_secret_lists_unless_list_as_says() -> None:
    keys = [{"name": "a", "key": "1"}, {"name": "b", "key": "2", "secrets": {"GH": "b-tok"}}]
    config = _config(SERVER, *keys)
    server = config.mcp_servers["gh"]
    assert server.identity_secrets == ["GH"]
    listing = lister(server, Identities(config.auth))
    assert listing is not None and listing.id == "b"
    filled = as_identity(server, listing)
    assert filled.headers == {"Authorization": "Bearer b-tok", "X-Static": "s"}
    chosen = _config({**SERVER, "list_as": "a"}, *keys).mcp_servers["gh"]
    assert lister(chosen, Identities(config.auth)) == Identity("a")


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ({**SERVER, "list_as": "nobody"}, "mcpServers.gh.list_as: 'nobody' is not a named identity"),
        (SERVER, "mcpServers.gh: no identity in auth.api_keys has every secret it references (GH)"),
    ],
)
def test_a_server_nobody_can_list_is_refused_at_start_up(server: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(server, {"name": "a", "key": "1"})
    assert problem in "\n".join(caught.value.problems)


class FakeConnection:
    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.started = self.stopped = False

    async def start(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.stopped = True


async def test_identities_connections_are_bounded_and_the_idle_one_goes() -> None:
    server = McpServerConfig.model_validate({**SERVER, "max_identity_connections": 2})
    made: list[FakeConnection] = []

    def connect(config: McpServerConfig) -> Any:
        made.append(FakeConnection(config))
        return made[-1]

    listing: Any = FakeConnection(server)
    pool = IdentityConnections("gh", server, listing, Identity("lister"), connect)
    people = [Identity(name, secrets={"GH": f"{name}-tok"}) for name in ("a", "b", "c")]
    async with pool.use(Identity("lister", secrets={"GH": "x"})) as own:
        assert own is listing, "the lister calls on the listing connection"
    async with pool.use(people[0]) as first:
        assert first.config.headers["Authorization"] == "Bearer a-tok"
    async with pool.use(people[1]) as second:
        assert first is not second and pool.opened() == ["a", "b"]
        async with pool.use(people[0]):
            with pytest.raises(ServerUnavailable, match="max_identity_connections"):
                async with pool.use(people[2]):
                    pass  # both busy: none can close
    async with pool.use(people[1]):
        pass  # b is used last: a is the least recently used
    async with pool.use(people[2]):
        assert pool.opened() == ["b", "c"] and made[0].stopped, "a, the least recently used, closed"
    with pytest.raises(ServerUnavailable, match="needs this key's secret GH"):
        async with pool.use(Identity("nosecret")):
            pass
    await pool.stop()
    assert all(connection.stopped for connection in made)


class GatedConnection(FakeConnection):
    """Alice's connection starts only when the test says so, as a server that takes long to start (or never does)."""

    starting = asyncio.Event()
    release = asyncio.Event()

    async def start(self) -> None:
        if self.config.headers["Authorization"] == "Bearer alice-tok":
            GatedConnection.starting.set()
            await GatedConnection.release.wait()
        self.started = True


async def test_one_identitys_slow_start_is_that_identitys_wait_only() -> None:
    GatedConnection.starting, GatedConnection.release = asyncio.Event(), asyncio.Event()
    server = McpServerConfig.model_validate({**SERVER, "max_identity_connections": 4})
    made: list[GatedConnection] = []

    def connect(config: McpServerConfig) -> Any:
        made.append(GatedConnection(config))
        return made[-1]

    pool = IdentityConnections("gh", server, FakeConnection(server), Identity("lister"), connect)
    alice, bob, carol = (Identity(name, secrets={"GH": f"{name}-tok"}) for name in ("alice", "bob", "carol"))

    async def call(who: Identity) -> Any:
        async with pool.use(who) as connection:
            return connection

    await call(bob)  # Bob's connection is open before Alice's start
    alices = asyncio.create_task(call(alice))
    await GatedConnection.starting.wait()
    # A guard against a hang, not a timing: before, both waited for Alice's start to end.
    bobs = await asyncio.wait_for(call(bob), 10)
    carols = await asyncio.wait_for(call(carol), 10)
    assert bobs.started and carols.started and not alices.done(), "Bob and Carol answered while Alice's start ran"
    again = asyncio.create_task(call(alice))  # Alice's second call joins her start under way
    leaving = asyncio.create_task(call(alice))
    await asyncio.sleep(0)
    leaving.cancel()  # a caller that leaves does not cancel the start the others wait for
    GatedConnection.release.set()
    assert await alices is await again and (await alices).started
    assert pool.opened() == ["alice", "bob", "carol"] and len(made) == 3
    await pool.stop()
    assert all(connection.stopped for connection in made)


async def test_stopping_during_a_start_stops_the_connection_being_started() -> None:
    GatedConnection.starting, GatedConnection.release = asyncio.Event(), asyncio.Event()
    server = McpServerConfig.model_validate(SERVER)
    made: list[GatedConnection] = []

    def connect(config: McpServerConfig) -> Any:
        made.append(GatedConnection(config))
        return made[-1]

    pool = IdentityConnections("gh", server, FakeConnection(server), Identity("lister"), connect)

    async def call() -> None:
        async with pool.use(Identity("alice", secrets={"GH": "alice-tok"})):
            pass

    waiting = asyncio.create_task(call())
    await GatedConnection.starting.wait()
    await pool.stop()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiting, 10)  # a guard against a hang: before, the start went on after the stop
    assert made[0].stopped and pool.opened() == []
