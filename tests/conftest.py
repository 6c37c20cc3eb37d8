"""Shared fixtures: a gateway wired to in-memory fastmcp servers and a respx-scripted upstream."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import respx

from app.config import Config, parse_config
from app.engine.gateway import Gateway
from app.server.app import create_app

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """toolsift's model store and embedding cache live in a directory of the test run, shared by its tests."""
    if "TOOLSIFT_HOME" not in os.environ:
        os.environ["TOOLSIFT_HOME"] = tempfile.mkdtemp(prefix="toolsift-test-home-")


SERVERS = ROOT / "examples" / "servers"
UPSTREAM = "http://upstream.test/v1"


def load_example(name: str) -> ModuleType:
    """Import an example server module by file path (fresh state every call)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", SERVERS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_config(**overrides: Any) -> Config:
    raw: dict[str, Any] = {
        "providers": {"up": {"base_url": UPSTREAM, "api_key": "sk-test-secret", "max_retries": 0}},
        "models": {"fast": {"provider": "up", "model": "gpt-test-mini", "params": {"temperature": 0.1}}},
        "mcpServers": {
            "weather": {"command": "unused", "defer_loading": False},
            "notes": {"command": "unused", "defer_loading": True},
            "finance": {"command": "unused", "defer_loading": True},
            "textkit": {"command": "unused", "defer_loading": True},
        },
        "tool_discovery": {"enabled": True},
        "tool_sets": {
            "money": {"servers": {"finance": ["convert_currency", "get_exchange_rates"]}},
            "notes_only": {"servers": {"notes": {"exclude": ["delete_note"]}}},
        },
    }
    for key, value in overrides.items():
        raw[key] = value
    # Keyword search unless a test asks for meaning: the semantic tests load the model themselves.
    raw["tool_discovery"] = {"semantic": {"enabled": False}, **raw.get("tool_discovery", {})}
    return parse_config(raw, environ={})


def completion(
    content: str | None = None,
    calls: list[tuple[str, Any]] | None = None,
    usage: tuple[int, int] | None = (10, 5),
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """An OpenAI chat.completion; `calls` are (name, arguments) with arguments a dict or a raw string."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for index, (name, args) in enumerate(calls)
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test-mini-2025",
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


class Upstream:
    """A scripted upstream: answers each call with the next reply and records what it was sent."""

    def __init__(self, router: respx.MockRouter) -> None:
        self.router = router
        self.replies: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []
        self.route = router.post(f"{UPSTREAM}/chat/completions").mock(side_effect=self._answer)

    def script(self, *replies: Any) -> None:
        self.replies.extend(replies)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        self.headers.append(request.headers)
        reply = self.replies.pop(0) if self.replies else completion("(script exhausted)")
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        return httpx.Response(200, json=reply)

    def tool_names(self, call: int) -> list[str]:
        return [tool["function"]["name"] for tool in self.requests[call].get("tools", [])]


@contextlib.contextmanager
def mock_upstreams() -> Iterator[respx.MockRouter]:
    """respx at the httpx client level, where the providers' own transport sits; the test client reaching the
    gateway in memory (host `gw`) passes through."""
    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="gw").pass_through()
        yield router


@pytest.fixture
def upstream() -> Any:
    with mock_upstreams() as router:
        yield Upstream(router)


GatewayFactory = Callable[..., Any]


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


def chat_body(*messages: Any, **extra: Any) -> dict[str, Any]:
    turns = [{"role": "user", "content": m} if isinstance(m, str) else m for m in messages]
    return {"model": "fast", "messages": turns or [{"role": "user", "content": "hi"}], **extra}


@contextlib.contextmanager
def served_gateway(config_path: Path, port: int, command: str = "serve") -> Iterator[str]:
    """`toolsift serve` (or `command`) on `config_path` in its own process, as a user runs it; yields its base URL
    once up."""
    toolsift = str(Path(sys.executable).parent / "toolsift")
    process = subprocess.Popen(
        [toolsift, command, "--config", str(config_path), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("gateway did not start")
        time.sleep(0.1)
    try:
        yield base
    finally:
        process.terminate()
        process.wait(15)
