"""MCP faults with real processes: a server killed mid-call comes back, a hanging one times out, a huge result is
cut, and none of it touches requests to other servers. The upstream is a real one on a loopback socket."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import SERVERS, ScriptedUpstream, chat_body, completion, load_example, make_config
from tests.support.mcp import wait_for

CRASHY = str(SERVERS.parent.parent / "tests" / "servers" / "crashy.py")


def _config(scripted: ScriptedUpstream) -> Any:
    servers = {
        "crashy": {"command": "python", "args": [CRASHY], "tool_timeout": 3},
        "weather": {"command": "unused"},
    }
    provider = {"base_url": scripted.base_url, "api_key": "sk-test", "max_retries": 0}
    return make_config(providers={"up": provider}, mcpServers=servers, tool_sets={}, tool_result_max_chars=5000)


async def test_a_server_killed_mid_call_answers_an_error_and_comes_back(
    scripted: ScriptedUpstream, gateway_factory: Any
) -> None:
    client, gateway = await gateway_factory(_config(scripted), targets={"weather": load_example("weather").mcp})
    scripted.script(
        completion(calls=[("crashy__crash", {}), ("weather__get_current_weather", {"city": "Paris"})]),
        completion("the crash was reported"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("crash it"))
    assert response.status_code == 200
    crashed, other = scripted.requests[1]["messages"][-2:]
    assert crashed["content"].startswith("Error: ")
    assert not other["content"].startswith("Error"), "the other server's call in the same round still ran"

    connection = gateway.mcp.connections["crashy"]
    await wait_for(lambda: connection.state.value == "down")
    await wait_for(lambda: connection.state.value == "up")
    # The catalog is rebuilt after the server is up again, at most one rebuild interval later.
    await wait_for(lambda: "crashy__echo" in gateway.mcp.catalog.tools)
    scripted.script(completion(calls=[("crashy__echo", {"text": "alive again"})]), completion("ok"))
    await client.post("/v1/chat/completions", json=chat_body("echo"))
    assert scripted.requests[-1]["messages"][-1]["content"] == "alive again"


async def test_a_server_that_dies_while_idle_is_seen_down_by_the_liveness_ping(
    scripted: ScriptedUpstream, gateway_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idle connections are pinged, not re-listed; a stdio server that died between calls is still seen down."""
    import os
    import signal
    from pathlib import Path

    from app.mcp.client import connection as connection_module

    monkeypatch.setattr(connection_module, "LIVENESS_INTERVAL", 0.2)
    _, gateway = await gateway_factory(_config(scripted), targets={"weather": load_example("weather").mcp})
    connection = gateway.mcp.connections["crashy"]
    await wait_for(lambda: connection.state.value == "up")
    (child,) = [pid for pid in _children(os.getpid()) if "crashy" in Path(f"/proc/{pid}/cmdline").read_text()]
    os.kill(child, signal.SIGKILL)
    await wait_for(lambda: connection.state.value == "down", 10)
    await wait_for(lambda: connection.state.value == "up", 20)


async def test_a_hanging_tool_times_out_and_a_huge_result_is_cut(
    scripted: ScriptedUpstream, gateway_factory: Any
) -> None:
    client, gateway = await gateway_factory(_config(scripted), targets={"weather": load_example("weather").mcp})
    scripted.script(completion(calls=[("crashy__hang", {})]), completion("done"))
    response = await client.post("/v1/chat/completions", json=chat_body("slow"))
    assert response.status_code == 200
    hung = scripted.requests[1]["messages"][-1]["content"]
    assert hung == "Error: 'hang' on MCP server 'crashy' timed out after 3s"
    scripted.script(completion(calls=[("crashy__huge", {"megabytes": 2})]), completion("done"))
    await client.post("/v1/chat/completions", json=chat_body("big"))
    huge = scripted.requests[-1]["messages"][-1]["content"]
    assert len(huge) <= 5000 and "truncated by toolsift: showing 5,000 of 2,097,152 characters" in huge
    scripted.script(completion(calls=[("crashy__echo", {"text": "still fine"})]), completion("ok"))
    await client.post("/v1/chat/completions", json=chat_body("echo"))
    assert scripted.requests[-1]["messages"][-1]["content"] == "still fine"
    assert gateway.mcp.connections["crashy"].state.value == "up"


def _children(pid: int) -> list[int]:
    """Direct child processes of `pid`, read from /proc (Linux)."""
    import os
    from pathlib import Path

    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry.name))
    return [child for child in children if os.path.exists(f"/proc/{child}")]


def test_sigterm_closes_every_mcp_child_process(tmp_path: Any) -> None:
    import json
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx

    from tests.support import free_port

    config = {
        "mcpServers": {
            name: {"command": "python", "args": [str(SERVERS / f"{name}.py")]} for name in ("weather", "notes")
        }
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    port = free_port()
    toolsift = str(Path(sys.executable).parent / "toolsift")
    process = subprocess.Popen(
        [toolsift, "serve", "--config", str(tmp_path / "config.json"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        children = _children(process.pid)
        assert len(children) == 2, "one process per stdio server"
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) in (0, -signal.SIGTERM), "uvicorn shuts down, then re-raises the signal"
        time.sleep(0.5)
        assert not [child for child in children if Path(f"/proc/{child}").exists()], "no orphans"
    finally:
        if process.poll() is None:
            process.kill()


def test_a_server_that_cannot_start_never_freezes_the_gateway_while_it_embeds_tools(tmp_path: Any) -> None:
    """`toolsift serve` with a fresh cache (its worker thread embeds every tool at start) and a server whose command
    is missing (respawned with backoff): each spawn was a fork while numpy's BLAS threads worked, and OpenBLAS's fork
    handler waited on them with the event loop held, so about one start in two stopped answering for good."""
    import json
    import os
    import sys
    import time
    from pathlib import Path

    import httpx

    from tests.support import free_port, served_gateway

    def server(name: str) -> dict[str, Any]:
        return {"command": sys.executable, "args": [str(SERVERS / f"{name}.py")], "defer_loading": True}

    config = {"mcpServers": {**{name: server(name) for name in ("weather", "finance", "notes", "textkit")},
                             "ghost": {"command": "toolsift-no-such-server"}}}  # fmt: skip
    path = Path(tmp_path) / "config.json"
    path.write_text(json.dumps(config))
    home = os.environ.get("TOOLSIFT_HOME")
    os.environ["TOOLSIFT_HOME"] = str(Path(tmp_path) / "home")  # an empty cache: every tool is embedded at start
    try:
        with served_gateway(path, free_port()) as base:
            answered = []
            for _ in range(15):  # through the ghost's first respawns (1, 2, 4, 8 s) and the embedding
                answered.append(httpx.get(f"{base}/healthz", timeout=20).status_code)
                time.sleep(1)
    finally:
        if home is None:
            os.environ.pop("TOOLSIFT_HOME", None)
        else:
            os.environ["TOOLSIFT_HOME"] = home
    assert answered == [200] * 15
