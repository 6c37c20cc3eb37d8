"""`instances: N` on a stdio server, with real processes: one model reply's concurrent calls are spread over the N
processes (the server answers with its PID), the tools are listed once, and an instance that is killed gets no
more calls and is restarted on its own while the others serve."""

from __future__ import annotations

import os
import signal
from typing import Any

from tests.support import SERVERS, ScriptedUpstream, chat_body, completion, make_config
from tests.support.mcp import wait_for

WHOAMI = str(SERVERS.parent.parent / "tests" / "servers" / "whoami.py")


def _config(scripted: ScriptedUpstream, instances: int) -> Any:
    servers = {"who": {"command": "python", "args": [WHOAMI], "instances": instances, "defer_loading": False}}
    provider = {"base_url": scripted.base_url, "api_key": "sk-test", "max_retries": 0}
    return make_config(providers={"up": provider}, mcpServers=servers, tool_sets={})


def _pids(scripted: ScriptedUpstream) -> list[int]:
    """The PIDs the last round's tool results name."""
    results = [m["content"] for m in scripted.requests[-1]["messages"] if m["role"] == "tool"]
    assert all(result.startswith("pid ") for result in results), results
    return [int(result.split()[1]) for result in results]


async def _round_of(client: Any, scripted: ScriptedUpstream, calls: int, seconds: float) -> list[int]:
    scripted.script(completion(calls=[("who__whoami", {"seconds": seconds})] * calls), completion("done"))
    response = await client.post("/v1/chat/completions", json=chat_body("who answers?"))
    assert response.status_code == 200
    return _pids(scripted)


async def test_calls_spread_over_the_instances_and_one_killed_is_restarted_alone(
    scripted: ScriptedUpstream, gateway_factory: Any
) -> None:
    client, gateway = await gateway_factory(_config(scripted, 3), targets={})
    health = (await client.get("/healthz")).json()["servers"]["who"]
    assert health["state"] == "up" and health["tools"] == 1, "the tools are listed once, not once an instance"
    started = {instance["pid"] for instance in health["instances"]}
    assert len(started) == 3 and None not in started
    assert [name for name in gateway.mcp.catalog.tools if name.startswith("who__")] == ["who__whoami"]

    pids = await _round_of(client, scripted, 6, 0.3)
    assert set(pids) == started and all(pids.count(pid) == 2 for pid in started), "two calls on each process"

    killed = pids[0]
    os.kill(killed, signal.SIGKILL)
    pool = gateway.mcp.connections["who"]
    await wait_for(lambda: any(one["state"] != "up" for one in pool.instances()), 10)
    survivors = started - {killed}
    assert set(await _round_of(client, scripted, 4, 0.1)) == survivors, "the killed one gets no call"
    assert (await client.get("/healthz")).json()["servers"]["who"]["state"] == "up"

    await wait_for(lambda: all(one["state"] == "up" for one in pool.instances()), 20)
    restarted = {one["pid"] for one in pool.instances()}
    assert survivors < restarted and killed not in restarted and len(restarted) == 3, "the others kept running"
    assert len(set(await _round_of(client, scripted, 3, 0.3))) == 3


async def test_one_instance_is_one_process_as_before(scripted: ScriptedUpstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(_config(scripted, 1), targets={})
    health = (await client.get("/healthz")).json()["servers"]["who"]
    assert "instances" not in health and health["state"] == "up"
    assert len(set(await _round_of(client, scripted, 3, 0.05))) == 1
