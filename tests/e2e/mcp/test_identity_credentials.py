"""Per-identity MCP credentials through the real server: a stdio server's `env` and a remote server's `headers`
name `${identity.ECHO_TOKEN}`; each identity's secret reaches only its own connection (an echo server tells a
fingerprint of what it got), never the caller's own key; an identity without the secret gets a clear tool error;
an idle identity's connection closes."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.support import ROOT, ScriptedUpstream, completion, free_port, gateway_config, served_gateway
from tests.support.mcp import mcp_client, names, text

ECHO = ROOT / "tests" / "servers" / "echo_identity.py"
SECRETS = {"alice": "alice-secret-1", "bob": "bob-secret-2"}
ADMIN = {"authorization": "Bearer gw-admin"}


def _fingerprint(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:12]


@pytest.fixture(scope="module")
def echo_http() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ECHO), str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=0.5)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, echo_http: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = gateway_config(
        scripted,
        claude=False,
        mcpServers={
            "echo": {
                "command": sys.executable,
                "args": [str(ECHO)],
                "env": {"ECHO_TOKEN": "${identity.ECHO_TOKEN}"},
                "identity_idle_seconds": 1.0,
            },
            "remote": {"url": echo_http, "headers": {"X-Token": "${identity.ECHO_TOKEN}"}},
        },
        auth={
            "api_keys": [
                {"name": "alice", "key": "gw-alice", "secrets": {"ECHO_TOKEN": SECRETS["alice"]}},
                {"name": "bob", "key": "gw-bob", "secrets": {"ECHO_TOKEN": SECRETS["bob"]}},
                {"name": "carol", "key": "gw-carol"},
            ],
            "admin_keys": ["gw-admin"],
        },
    )
    path: Path = tmp_path_factory.mktemp("credentials") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def _whoami(gateway: str, scripted: ScriptedUpstream, key: str, tool: str) -> str:
    scripted.script(completion(calls=[(tool, {})]), completion("done"))
    openai.OpenAI(base_url=f"{gateway}/v1", api_key=key, max_retries=0).chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "who am I?"}]
    )
    return str(scripted.requests[1]["messages"][-1]["content"])


def test_each_identitys_secret_reaches_only_its_own_stdio_process(gateway: str, scripted: ScriptedUpstream) -> None:
    alice = _whoami(gateway, scripted, "gw-alice", "echo__whoami")
    bob = _whoami(gateway, scripted, "gw-bob", "echo__whoami")
    assert f"token={_fingerprint(SECRETS['alice'])}" in alice
    assert f"token={_fingerprint(SECRETS['bob'])}" in bob
    pids = [re.search(r"pid=(\d+)", found) for found in (alice, bob)]
    assert pids[0] and pids[1] and pids[0].group(1) != pids[1].group(1), "one process per identity"
    assert SECRETS["alice"] not in alice + bob and SECRETS["bob"] not in alice + bob


def test_each_identitys_secret_reaches_only_its_own_remote_connection(gateway: str, scripted: ScriptedUpstream) -> None:
    alice = _whoami(gateway, scripted, "gw-alice", "remote__whoami")
    bob = _whoami(gateway, scripted, "gw-bob", "remote__whoami")
    assert f"token={_fingerprint(SECRETS['alice'])}" in alice and f"token={_fingerprint(SECRETS['bob'])}" in bob
    assert "authorization=none" in alice + bob, "the caller's own key never reaches an MCP server"


def test_an_identity_without_the_secret_gets_a_clear_error_and_the_others_work(
    gateway: str, scripted: ScriptedUpstream
) -> None:
    carol = _whoami(gateway, scripted, "gw-carol", "echo__whoami")
    assert "needs this key's secret ECHO_TOKEN" in carol and "'carol'" in carol
    assert f"token={_fingerprint(SECRETS['bob'])}" in _whoami(gateway, scripted, "gw-bob", "echo__whoami")


async def test_the_mcp_front_calls_on_the_callers_own_connection(gateway: str) -> None:
    async with mcp_client(f"{gateway}/mcp", "gw-bob") as bob, mcp_client(f"{gateway}/mcp", "gw-carol") as carol:
        assert "echo__whoami" in await names(bob), "the tools are listed (as alice, the first with the secret)"
        ran = await bob.call_tool_mcp("echo__whoami", {})
        assert f"token={_fingerprint(SECRETS['bob'])}" in text(ran)
        refused = await carol.call_tool_mcp("echo__whoami", {})
        assert refused.is_error and "needs this key's secret ECHO_TOKEN" in text(refused)


def test_an_idle_identitys_connection_closes(gateway: str, scripted: ScriptedUpstream) -> None:
    _whoami(gateway, scripted, "gw-bob", "echo__whoami")

    def opened() -> list[str]:
        names: list[str] = httpx.get(f"{gateway}/healthz", headers=ADMIN).json()["servers"]["echo"]["identities"]
        return names

    assert opened() == ["bob"]
    deadline = time.monotonic() + 10
    while opened() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert opened() == []


def test_healthz_names_no_identity_but_to_an_admin_key(gateway: str, scripted: ScriptedUpstream) -> None:
    _whoami(gateway, scripted, "gw-bob", "echo__whoami")
    for headers in ({}, {"authorization": "Bearer gw-bob"}):
        shown = httpx.get(f"{gateway}/healthz", headers=headers)
        assert shown.status_code == 200 and "bob" not in shown.text, "a probe's view names no identity"
        assert shown.json()["servers"]["echo"]["identity_connections"] == 1
    assert httpx.get(f"{gateway}/healthz", headers=ADMIN).json()["servers"]["echo"]["identities"] == ["bob"]
