"""Two `toolsift serve` processes (replicas behind a load balancer) on one real redis-server: what one caller did
on one replica is there on the other, and a replica stopped with SIGTERM finishes what it was serving.

Shared through Redis: a chat session's discoveries, a stored response (`previous_response_id`, through the openai
SDK), an MCP client's enabled tools (`/mcp`, lazy mode, on the sessionless protocol). Per process: the stdio MCP
servers each replica runs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.support import ROOT, SERVERS, ScriptedUpstream, chat_body, completion, free_port
from tests.support.mcp import mcp_client, names, text

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")

KEY = "key-team-replicas"
AS_TEAM = {"Authorization": f"Bearer {KEY}"}
WHOAMI = str(SERVERS.parent.parent / "tests" / "servers" / "whoami.py")
TOOLSIFT = str(Path(sys.executable).parent / "toolsift")

TOOLS = {"deferral": "tools"}  # found tools join `tools`, as these tests read them


class Replica:
    def __init__(self, process: subprocess.Popen[bytes], port: int) -> None:
        self.process, self.base = process, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def replicas(
    redis_url: str, scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Replica, Replica]]:
    """Two gateways on one config and one Redis, started together."""
    config = {
        "providers": {"up": {"base_url": scripted.base_url, "api_key": "sk-test", "max_retries": 0, **TOOLS}},
        "models": {"fast": {"provider": "up", "model": "gpt-test-mini"}},
        "mcpServers": {
            "textkit": {"command": "python", "args": [str(SERVERS / "textkit.py")], "defer_loading": True},
            "finance": {"command": "python", "args": [str(SERVERS / "finance.py")], "defer_loading": True},
            "who": {"command": "python", "args": [WHOAMI], "defer_loading": False},
        },
        "tool_discovery": {"semantic": {"enabled": False}},
        "auth": {"api_keys": [KEY]},
        "sessions": {"redis_url": redis_url},
        "shutdown_grace_seconds": 30,
    }
    path = tmp_path_factory.mktemp("replicas") / "config.json"
    path.write_text(json.dumps(config))
    started = []
    for _ in range(2):
        port = free_port()
        command = [TOOLSIFT, "serve", "--config", str(path), "--port", str(port), "--log-level", "warning"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(Replica(process, port))
    try:
        for replica in started:
            _wait_ready(replica)
        yield started[0], started[1]
    finally:
        for replica in started:
            if replica.process.poll() is None:
                replica.process.terminate()
                replica.process.wait(30)


def _wait_ready(replica: Replica) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert replica.process.poll() is None, "the replica exited"
        try:
            health = httpx.get(f"{replica.base}/healthz", timeout=2).json()
            if all(server["state"] == "up" for server in health["servers"].values()):
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    raise AssertionError("the replica did not come up")


def _chat(replica: Replica, body: dict[str, object], session: str) -> httpx.Response:
    return httpx.post(
        f"{replica.base}/v1/chat/completions", json=body, headers={**AS_TEAM, "X-Session-Id": session}, timeout=60
    )


def test_a_sessions_discoveries_found_on_one_replica_are_callable_on_the_other(
    replicas: tuple[Replica, Replica], scripted: ScriptedUpstream
) -> None:
    a, b = replicas
    scripted.script(completion(calls=[("search_tools", {"tool_names": ["slugify"]})]), completion("found it"))
    assert _chat(a, chat_body("find a slug tool"), "conversation-1").status_code == 200
    scripted.script(completion(calls=[("textkit__slugify", {"text": "Hello Replicas"})]), completion("done"))
    answered = _chat(b, chat_body("now slug it"), "conversation-1")
    assert answered.status_code == 200
    assert "textkit__slugify" in scripted.tool_names(0), "B sends the tool A's search found"
    assert scripted.requests[1]["messages"][-1]["content"] == "hello-replicas", "and runs it"
    assert answered.json()["tool_discovery"]["tools_called"] == ["textkit__slugify"]


async def test_a_response_stored_on_one_replica_is_continued_on_the_other(
    replicas: tuple[Replica, Replica], scripted: ScriptedUpstream
) -> None:
    a, b = replicas
    scripted.script(completion("First answer, from A."), completion("Second answer, from B."))
    on_a = openai.AsyncOpenAI(base_url=f"{a.base}/v1", api_key=KEY, max_retries=0)
    on_b = openai.AsyncOpenAI(base_url=f"{b.base}/v1", api_key=KEY, max_retries=0)
    made = await on_a.responses.create(model="fast", input="hello")
    answer = await on_b.responses.create(model="fast", input="and again", previous_response_id=made.id)
    assert answer.output_text == "Second answer, from B."
    assert scripted.requests[-1]["messages"][:2] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "First answer, from A."},
    ]
    assert (await on_b.responses.retrieve(made.id)).id == made.id
    await on_a.close()
    await on_b.close()


async def test_an_mcp_clients_enabled_tools_follow_it_to_the_other_replica(replicas: tuple[Replica, Replica]) -> None:
    a, b = replicas
    quote = "finance__get_stock_quote"
    async with mcp_client(f"{a.base}/mcp", KEY) as on_a:
        assert quote not in await names(on_a)
        found = await on_a.call_tool_mcp("search_tools", {"tool_names": ["get_stock_quote"]})
        assert quote in text(found) and quote in await names(on_a)
    async with mcp_client(f"{b.base}/mcp", KEY) as on_b:
        assert on_b.protocol_version == "2026-07-28", "sessionless: the client is its key, on any replica"
        assert quote in await names(on_b), "enabled on A, listed on B"
        ran = await on_b.call_tool_mcp(quote, {"symbol": "AAPL"})
        assert not ran.is_error and "AAPL" in text(ran)


@pytest.fixture(scope="module")
def balancer(replicas: tuple[Replica, Replica], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """HAProxy on compose's deploy/haproxy.cfg, its replicas found on loopback instead of Docker's DNS."""
    if shutil.which("haproxy") is None:
        pytest.skip("needs haproxy")
    port = free_port()
    servers = "".join(
        f"    server gateway{number} {replica.base.removeprefix('http://')} check inter 1s fall 1 rise 1\n"
        for number, replica in enumerate(replicas)
    )
    lines = []
    for line in (ROOT / "deploy" / "haproxy.cfg").read_text().splitlines(keepends=True):
        skipped = ("resolvers ", "nameserver ", "accepted_payload_size", "hold ", "log stdout", "maxconn ")
        if line.strip().startswith(skipped):  # Docker's DNS, its log and its file limits
            continue
        if line.strip().startswith("default-server "):
            continue
        if line.strip().startswith("server-template "):
            line = servers
        lines.append(line.replace("bind :8000", f"bind 127.0.0.1:{port}"))
    path = tmp_path_factory.mktemp("balancer") / "haproxy.cfg"
    path.write_text("".join(lines))
    process = subprocess.Popen(
        ["haproxy", "-db", "-f", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while not _answers(f"{base}/lb-healthz"):
            assert time.monotonic() < deadline and process.poll() is None, "haproxy did not start"
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(15)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _mcp_post(url: str, headers: dict[str, str], method: str, params: dict[str, object], id: int) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx.post(url, json=body, headers={**AS_TEAM, **accept, **headers}, timeout=30)


def test_behind_the_balancer_a_handshake_era_mcp_session_sticks_to_its_replica(
    balancer: str, replicas: tuple[Replica, Replica]
) -> None:
    """An MCP session before 2026-07-28 lives in the replica that opened it: the other answers 404, and the
    balancer sends every request of the session to the right one."""
    info = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "old-client", "version": "1"}}
    opened = _mcp_post(f"{balancer}/mcp", {}, "initialize", info, 1)
    assert opened.status_code == 200
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    httpx.post(f"{balancer}/mcp", json=note, headers={**AS_TEAM, **session}, timeout=30)
    direct = [_mcp_post(f"{replica.base}/mcp", session, "tools/list", {}, 2).status_code for replica in replicas]
    assert sorted(direct) == [200, 404], "one replica holds the session"
    for number in range(6):
        listed = _mcp_post(f"{balancer}/mcp", session, "tools/list", {}, 10 + number)
        assert listed.status_code == 200 and "search_tools" in listed.text


async def test_a_replica_stopped_with_sigterm_finishes_its_in_flight_request(
    replicas: tuple[Replica, Replica], scripted: ScriptedUpstream
) -> None:
    """The last test on the replicas: it stops B. A request in the middle of a 3-second MCP call on B when B gets
    SIGTERM is answered in full; B exits; A serves on."""
    a, b = replicas
    scripted.script(completion(calls=[("who__whoami", {"seconds": 3})]), completion("finished after the signal"))
    async with httpx.AsyncClient(timeout=60) as client:
        body = chat_body("a slow one")
        in_flight = asyncio.ensure_future(client.post(f"{b.base}/v1/chat/completions", json=body, headers=AS_TEAM))
        for _ in range(200):  # until the first round is answered: the slow MCP call is running
            if scripted.requests or in_flight.done():
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        assert not in_flight.done()
        b.process.send_signal(signal.SIGTERM)
        answered = await in_flight
    assert answered.status_code == 200
    assert answered.json()["choices"][0]["message"]["content"] == "finished after the signal"
    assert scripted.requests[1]["messages"][-1]["content"].startswith("pid "), "the slow call's own result"
    assert await asyncio.to_thread(b.process.wait, 30) in (0, -signal.SIGTERM)
    scripted.script(completion("A is still here"))
    on_a = httpx.post(f"{a.base}/v1/chat/completions", json=chat_body("still there?"), headers=AS_TEAM, timeout=60)
    assert on_a.json()["choices"][0]["message"]["content"] == "A is still here"


def test_with_one_replica_stopped_the_balancer_answers_every_request(
    balancer: str, replicas: tuple[Replica, Replica], scripted: ScriptedUpstream
) -> None:
    """After B's SIGTERM (above): the balancer's health check takes B out, and a request that still went to it is
    sent to A instead (`option redispatch`)."""
    assert replicas[1].process.poll() is not None, "B was stopped"
    scripted.fallback = completion("answered")
    try:
        for _ in range(6):
            answered = httpx.post(f"{balancer}/v1/chat/completions", json=chat_body("hi"), headers=AS_TEAM, timeout=60)
            assert answered.status_code == 200
    finally:
        scripted.fallback = None


def test_several_workers_on_one_port_share_a_session_through_redis(
    redis_url: str, scripted: ScriptedUpstream, tmp_path: Path
) -> None:
    """`serve --workers 2`: two worker processes on one port, each with its own stdio MCP server; whichever
    worker a request reaches, the session's discoveries are there."""
    config = {
        "providers": {"up": {"base_url": scripted.base_url, "api_key": "sk-test", "max_retries": 0, **TOOLS}},
        "models": {"fast": {"provider": "up", "model": "gpt-test-mini"}},
        "mcpServers": {"textkit": {"command": "python", "args": [str(SERVERS / "textkit.py")], "defer_loading": True}},
        "tool_discovery": {"semantic": {"enabled": False}},
        "auth": {"api_keys": [KEY]},
        "sessions": {"redis_url": redis_url},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    port = free_port()
    command = [
        TOOLSIFT,
        "serve",
        "--config",
        str(path),
        "--port",
        str(port),
        "--workers",
        "2",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    served = Replica(process, port)
    try:
        _wait_ready(served)
        workers = _children(process.pid)
        workers = [pid for pid in workers if _children(pid)]  # uvicorn's workers, each with its stdio server
        assert len(workers) == 2 and all(len(_children(worker)) == 1 for worker in workers), "per process"
        scripted.script(completion(calls=[("search_tools", {"tool_names": ["slugify"]})]), completion("found"))
        assert _chat(served, chat_body("find it"), "workers-1").status_code == 200
        for turn in range(6):  # new connections each time: the kernel spreads them over both workers
            scripted.script(completion("again"))
            assert _chat(served, chat_body(f"turn {turn}"), "workers-1").status_code == 200
            assert "textkit__slugify" in scripted.tool_names(0), f"turn {turn} knows the session's find"
        for _ in range(6):  # whichever worker answers a scrape, it counts all 7 requests
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
            lines = [line for line in text.splitlines() if line.startswith("toolsift_requests_total")]
            counted = sum(float(line.rsplit(" ", 1)[1]) for line in lines)
            assert counted == 7, text
    finally:
        process.terminate()
        process.wait(30)


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
