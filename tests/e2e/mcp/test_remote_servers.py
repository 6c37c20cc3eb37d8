"""Remote MCP servers: streamable HTTP and SSE through the real transports, and one that is not there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import SERVERS, Upstream, chat_body, completion, free_port, make_config
from tests.support.remote import serve_over_http


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from serve_over_http(SERVERS / "finance.py", "http")


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    yield from serve_over_http(SERVERS / "finance.py", "sse")


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


@pytest.fixture(scope="module")
def unauthorized_url() -> Iterator[str]:
    """A server that wants credentials: every request is a 401."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", "Bearer")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_DELETE = do_POST

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    server.shutdown()


async def test_a_refused_remote_server_names_the_status_and_the_likely_fix(
    http_url: str, unauthorized_url: str, gateway_factory: Any
) -> None:
    """A 401 was "Server returned an error response", a 404 "Not Found", SSE against a streamable HTTP server
    "Client error '400 Bad Request'": each now says the status and what to change."""
    base = http_url.rsplit("/", 1)[0]
    servers = {
        "locked": {"url": unauthorized_url},
        "misplaced": {"url": f"{base}/wrong"},
        "wrongway": {"url": http_url, "transport": "sse"},
    }
    _, gateway = await gateway_factory(make_config(mcpServers=servers, tool_sets={}, mcp_startup_timeout=5), targets={})
    errors = {name: health["error"] for name, health in gateway.mcp.health().items()}
    assert (
        errors["locked"].startswith("the server answered HTTP 401 Unauthorized at ")
        and '"headers"' in errors["locked"]
        and "Authorization" in errors["locked"]
    )
    assert errors["misplaced"] == (
        f"the server answered HTTP 404 Not Found at {base}/wrong: check the URL's path (an MCP server usually "
        "answers at /mcp)"
    )
    assert "HTTP 400 Bad Request" in errors["wrongway"] and 'remove "transport": "sse"' in errors["wrongway"]
