"""Remote MCP servers: streamable HTTP and SSE through the real transports, and one that is not there."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import SERVERS, Upstream, chat_body, completion, free_port, make_config

RUN_OVER_HTTP = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("remote", sys.argv[1])
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
module.mcp.run(transport=sys.argv[2], host="127.0.0.1", port=int(sys.argv[3]), show_banner=False, log_level="WARNING")
"""


def _serve(transport: str) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_OVER_HTTP, str(SERVERS / "finance.py"), transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    path = "/mcp" if transport == "http" else "/sse"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket_probe(port):
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"{transport} server did not start") from None
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}{path}"
    process.terminate()
    process.wait(10)


def socket_probe(port: int) -> Any:
    import socket

    return socket.create_connection(("127.0.0.1", port), timeout=0.5)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from _serve("http")


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    yield from _serve("sse")


@pytest.mark.parametrize("kind", ["streamable-http", "sse"])
async def test_remote_server_tools_are_discovered_and_called(
    kind: str, http_url: str, sse_url: str, upstream: Upstream, gateway_factory: Any
) -> None:
    url = http_url if kind == "streamable-http" else sse_url
    servers = {"money": {"url": url, "transport": kind, "headers": {"X-Team": "blue"}, "defer_loading": True}}
    client, gateway = await gateway_factory(make_config(mcpServers=servers, tool_sets={}), targets={})
    health = gateway.mcp.health()["money"]
    assert (health["state"], health["transport"], health["tools"]) == ("up", kind, 7)
    upstream.script(
        completion(calls=[("search_tools", {"query": "loan monthly payment"})]),
        completion(
            calls=[("money__calculate_loan_payment", {"principal": 10000, "annual_rate_percent": 6, "years": 5})]
        ),
        completion("about 193 a month"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("loan?"))
    assert response.status_code == 200
    result = upstream.requests[2]["messages"][-1]["content"]
    assert "193" in result and not result.startswith("Error")


async def test_unreachable_remote_server_is_down_with_its_error(upstream: Upstream, gateway_factory: Any) -> None:
    servers = {"gone": {"url": f"http://127.0.0.1:{free_port()}/mcp", "defer_loading": True}}
    client, gateway = await gateway_factory(
        make_config(mcpServers=servers, tool_sets={}, mcp_startup_timeout=5), targets={}
    )
    assert gateway.mcp.health()["gone"]["state"] == "down"
    health = (await client.get("/healthz")).json()
    assert health["status"] == "degraded" and health["servers"]["gone"]["error"]
    upstream.script(completion("fine"))
    response = await client.post("/v1/chat/completions", json=chat_body("hi"))
    assert response.status_code == 200 and "search_tools" not in upstream.tool_names(0)
