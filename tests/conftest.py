"""Fixtures and pytest hooks only; the helpers tests share live in tests/support."""

from __future__ import annotations

import functools
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from app.common import tracing
from app.config import Config
from app.discovery import semantic
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.server.app import create_app
from bench.common import start_redis
from tests.support import SERVERS, ScriptedUpstream, Upstream, example_targets, free_port, make_config, mock_upstreams
from tests.support.anthropic import scripted_anthropic

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "e2e")


def pytest_configure(config: pytest.Config) -> None:
    """toolsift's model store and embedding cache live in a directory of the test run, shared by its tests."""
    if "TOOLSIFT_HOME" not in os.environ:
        os.environ["TOOLSIFT_HOME"] = tempfile.mkdtemp(prefix="toolsift-test-home-")


def tier_of(path: Path) -> str | None:
    """A test's tier is the top directory it lives in under tests/: tests/unit/... or tests/e2e/..."""
    path = path.resolve()
    parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test is in exactly one tier, the directory it lives in, so `pytest -m unit` is the whole fast tier and
    nothing falls between."""
    misplaced = []
    for item in items:
        tier = tier_of(item.path)
        if tier is None or any(marker.name in TIERS for marker in item.iter_markers()):
            misplaced.append(item.nodeid)
        else:
            item.add_marker(tier)
    if misplaced:
        raise pytest.UsageError(
            "a test's tier is its directory, not a marker: move these under tests/unit/<area>/ (in-process and fast) "
            "or tests/e2e/<area>/ (processes, sockets, the model), <area> mirroring the app package they test, "
            "and drop any unit/e2e marker:\n  " + "\n  ".join(misplaced)
        )


@pytest.fixture(autouse=True)
def no_search_model_in_the_unit_tier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unit tier runs as on a machine without the search model: semantic search left on "auto" finds no model
    and searches by keyword, as it does there. Loading the real model (seconds, and a core while it embeds the
    tools) is the e2e tier's; a unit test of semantic search brings a model directory of its own."""
    if tier_of(request.node.path) != "unit":
        return
    found = semantic.find_model

    def only_directories(spec: str, base: Path | None = None) -> Path | None:
        path = Path(spec).expanduser()
        if path.is_dir() or (base is not None and (base / path).is_dir()):
            return found(spec, base)
        return None

    monkeypatch.setattr(semantic, "find_model", only_directories)


@pytest.fixture(scope="session", autouse=True)
def one_tls_context() -> Iterator[None]:
    """httpx's default TLS context (verified, on the CA bundle SSL_CERT_FILE/SSL_CERT_DIR or certifi name), built
    once for the run rather than once per provider: loading the bundle is most of what building a gateway costs.
    Contexts asked for otherwise (no verification, a context or a client certificate of the caller's) are built as
    asked."""
    default = httpx.create_ssl_context

    @functools.cache
    def shared(trust_env: bool, cafile: str | None, capath: str | None) -> ssl.SSLContext:
        return default(trust_env=trust_env)

    def create(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is True and cert is None:
            return shared(trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        return default(verify=verify, cert=cert, trust_env=trust_env)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(httpx, "create_ssl_context", create)  # what httpx-aiohttp's transport, the providers', calls
        patch.setattr(httpx._transports.default, "create_ssl_context", create)  # httpx's own transport
        yield


@pytest.fixture
def upstream() -> Any:
    with mock_upstreams() as router:
        yield Upstream(router)


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedUpstream]:
    """A scripted upstream on a loopback port (tests/support/scripted.py), one for the test module: its tests
    script the replies they want and read back what the gateway sent."""
    server = ScriptedUpstream().start()
    yield server
    server.stop()


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
            targets = example_targets(*(name for name in config.mcp_servers if (SERVERS / f"{name}.py").exists()))
        gateway = Gateway(config, mcp_targets=targets)
        await gateway.start()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(Engine(gateway))), base_url="http://gw")
        started.append((gateway, client))
        return client, gateway

    yield make
    for gateway, client in started:
        await client.aclose()
        await gateway.stop()


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    """Tracing on for the test, its spans kept in memory for it to read."""
    from opentelemetry.sdk.trace import TracerProvider  # the `otel` extra: imported by the tests that trace only
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    yield exporter
    tracing.use(None)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A redis-server of the test module's own, on a free port."""
    port = free_port()
    process = start_redis(port)
    yield f"redis://127.0.0.1:{port}/0"
    process.terminate()
    process.wait(10)
