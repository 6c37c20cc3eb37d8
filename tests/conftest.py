"""Fixtures and pytest hooks only; the helpers tests share live in tests/support."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from app.config import Config
from app.engine.gateway import Gateway
from app.server.app import create_app
from tests.support import SERVERS, Upstream, free_port, load_example, make_config, mock_upstreams
from tests.support.anthropic import scripted_anthropic

TIERS = ("unit", "e2e")


def pytest_configure(config: pytest.Config) -> None:
    """toolsift's model store and embedding cache live in a directory of the test run, shared by its tests."""
    if "TOOLSIFT_HOME" not in os.environ:
        os.environ["TOOLSIFT_HOME"] = tempfile.mkdtemp(prefix="toolsift-test-home-")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test is in exactly one tier, so `pytest -m unit` is the whole fast tier and nothing falls between."""
    wrong = [
        f"{item.nodeid}: {' and '.join(tiers) or 'neither'}"
        for item in items
        if len(tiers := [tier for tier in TIERS if item.get_closest_marker(tier)]) != 1
    ]
    if wrong:
        raise pytest.UsageError(
            "each test needs exactly one of the markers unit, e2e (pytestmark in its module):\n  " + "\n  ".join(wrong)
        )


@pytest.fixture
def upstream() -> Any:
    with mock_upstreams() as router:
        yield Upstream(router)


@pytest.fixture
def anthropic_upstream() -> Any:
    """An Anthropic upstream in memory: yields (calls, replies); push httpx.Responses onto replies."""
    with mock_upstreams() as router:
        yield scripted_anthropic(router)


@pytest.fixture
async def gateway_factory() -> AsyncIterator[Callable[..., Any]]:
    """Start gateways on in-memory example servers; yields `make(config=None, targets=None) -> (client, gw)`."""
    started: list[tuple[Gateway, httpx.AsyncClient]] = []

    async def make(
        config: Config | None = None, targets: dict[str, Any] | None = None
    ) -> tuple[httpx.AsyncClient, Gateway]:
        config = config or make_config()
        if targets is None:
            targets = {name: load_example(name).mcp for name in config.mcp_servers if (SERVERS / f"{name}.py").exists()}
        gateway = Gateway(config, mcp_targets=targets)
        await gateway.start()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(gateway)), base_url="http://gw")
        started.append((gateway, client))
        return client, gateway

    yield make
    for gateway, client in started:
        await client.aclose()
        await gateway.stop()


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A redis-server of the test module's own, on a free port."""
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    process.terminate()
    process.wait(10)
