"""Search that learns, through the real gateway: two `toolsift serve` replicas with meaning search on one
redis-server. A chat that searched "book a meeting room" and successfully called calendar__create_event makes a
later request's `search_tools("reserve a conference room")` rank that tool first, on the other replica too; the
admin API lists and clears the pair, and then it ranks below first again, as before anything was learned.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import SERVERS, ScriptedUpstream, chat_body, completion, free_port, served_gateway

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")

KEY, ADMIN = "key-team-learning", "admin-learning"
TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
TOOL = "calendar__create_event"
BOOKED = {"calendar": "work", "title": "Design review", "start": "2026-12-01T10:00:00"}
CONFIG: dict[str, Path] = {}
Pair = tuple[str, str]  # two replicas' base URLs


@pytest.fixture(scope="module")
def replicas(redis_url: str, scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    provider = {"base_url": scripted.base_url, "api_key": "sk-test", "max_retries": 0, "deferral": "tools"}
    config = {
        "providers": {"up": provider, "via_call": {**provider, "deferral": "call_tool"}},
        "models": {"fast": {"provider": "up", "model": "gpt-test"}, "calls": {"provider": "via_call", "model": "m"}},
        "mcpServers": {"calendar": {"command": "python", "args": [str(SERVERS / "calendar_server.py")],
                                    "defer_loading": True}},
        "auth": {"api_keys": [KEY], "admin_keys": [ADMIN]},
        "store": {"redis_url": redis_url},
    }  # fmt: skip
    path = CONFIG["path"] = tmp_path_factory.mktemp("learning") / "config.json"
    path.write_text(json.dumps(config))
    with contextlib.ExitStack() as stack:
        a, b = (stack.enter_context(served_gateway(path, free_port())) for _ in range(2))
        for base in (a, b):
            _wait_ready(base)
        yield a, b


def _wait_ready(base: str) -> None:
    """Ready once its tools are embedded: search by meaning, as a balancer waits for it."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("the replica did not become ready")


def _chat(replica: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {KEY}"}
    return httpx.post(f"{replica}/v1/chat/completions", json=body, headers=headers, timeout=120)


def _searched_first(replica: str, scripted: ScriptedUpstream, query: str, stream: bool) -> str:
    """The first tool a model's `search_tools(query)` got back, in a chat through `replica`."""
    scripted.script(completion(calls=[("search_tools", {"query": query})]), completion("Here is what I found."))
    answered = _chat(replica, chat_body("reserve a room for friday", stream=stream))
    assert answered.status_code == 200, answered.text
    result = scripted.requests[1]["messages"][-1]["content"]
    found = re.search(r"calendar__\w+", result)  # the first tool named, whichever way the result lists them
    assert found is not None, result
    return found.group(0)


def _admin(replica: str, method: str, **params: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    answered = httpx.request(method, f"{replica}/admin/learning", params=params, headers=headers, timeout=30)
    assert answered.status_code == 200, answered.text
    body: dict[str, Any] = answered.json()
    return body


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_need_learned_on_one_replica_ranks_its_tool_first_on_the_other_until_cleared(
    replicas: Pair, scripted: ScriptedUpstream, stream: bool
) -> None:
    a, b = replicas
    _admin(a, "DELETE")
    assert _searched_first(b, scripted, "reserve a conference room", stream) != TOOL, "nothing learned yet"

    scripted.script(
        completion(calls=[("search_tools", {"query": "book a meeting room"})]),
        completion(calls=[(TOOL, BOOKED)]),
        completion("Booked."),
    )
    booked = _chat(a, chat_body("book a meeting room for the design review", stream=stream))
    assert booked.status_code == 200 and "Booked." in booked.text
    called = scripted.requests[2]["messages"][-1]["content"]
    assert "Design review" in called and not called.startswith("Error"), "the call succeeded"

    assert _searched_first(b, scripted, "reserve a conference room", stream) == TOOL
    learning = httpx.get(f"{b}/healthz", timeout=5).json()["search"]["learning"]
    assert learning == {"enabled": True, "pairs": 1, "identities": 1}, "what replica B read of the store"
    listed = _admin(a, "GET", tool=TOOL)
    assert [(pair["query"], pair["uses"]) for pair in listed["pairs"]] == [("book a meeting room", 1)]
    asked = {"query": "reserve a conference room", "identity": listed["pairs"][0]["identity"]}
    headers = {"Authorization": f"Bearer {ADMIN}"}
    explained = httpx.get(f"{b}/admin/search", params=asked, headers=headers, timeout=30).json()
    assert explained["results"][0]["name"] == TOOL and explained["results"][0]["learned"] == 1

    assert _admin(a, "DELETE", tool=TOOL)["cleared"] == 1
    assert _searched_first(b, scripted, "reserve a conference room", stream) != TOOL, "forgotten on every replica"


def test_a_call_made_through_call_tool_counts_like_a_direct_call(replicas: Pair, scripted: ScriptedUpstream) -> None:
    a, b = replicas
    _admin(a, "DELETE")
    scripted.script(
        completion(calls=[("search_tools", {"query": "book a meeting room"})]),
        completion(calls=[("call_tool", {"name": TOOL, "arguments": BOOKED})]),
        completion("Booked."),
    )
    assert _chat(a, chat_body("book a meeting room", model="calls")).status_code == 200
    assert [pair["tool"] for pair in _admin(b, "GET")["pairs"]] == [TOOL]
    assert _admin(b, "GET", identity="nobody")["pairs"] == []


def test_a_failed_call_teaches_nothing(replicas: Pair, scripted: ScriptedUpstream) -> None:
    a, _ = replicas
    _admin(a, "DELETE")
    scripted.script(
        completion(calls=[("search_tools", {"query": "book a meeting room"})]),
        completion(calls=[(TOOL, {"calendar": "no-such-calendar", "title": "x", "start": "soon"})]),
        completion("It failed."),
    )
    assert _chat(a, chat_body("book a meeting room")).status_code == 200
    assert _admin(a, "GET")["pairs"] == []


def test_toolsift_search_without_a_gateway_reads_what_the_store_learned(
    replicas: Pair, scripted: ScriptedUpstream, tmp_path: Path
) -> None:
    a, _ = replicas
    _admin(a, "DELETE")
    scripted.script(
        completion(calls=[("search_tools", {"query": "book a meeting room"})]),
        completion(calls=[(TOOL, BOOKED)]),
        completion("Booked."),
    )
    assert _chat(a, chat_body("book a meeting room")).status_code == 200
    alone = {**os.environ, "TOOLSIFT_HOME": str(tmp_path)}  # no note of the running replicas: it ranks by itself
    command = [TOOLSIFT, "search", "book a meeting room", "--explain", "--config", str(CONFIG["path"])]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, env=alone)
    assert result.returncode == 0, result.stderr
    assert "answered by the gateway" not in result.stderr
    assert "learned from 1 use" in result.stdout
