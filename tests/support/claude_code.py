"""Claude Code (`claude -p`, the real program) against a gateway served by uvicorn in a thread, which records the
Messages requests the program sent it (bodies and answer statuses), so a test can compare them with what went
upstream."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.config import Config
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.server.app import create_app
from tests.support.clients import client_program
from tests.support.scripted import free_port

MESSAGES = "/v1/messages"


@dataclass
class Exchange:
    """One Messages request Claude Code sent, and the HTTP status it got."""

    headers: dict[str, str]
    body: bytes = b""
    status: int | None = None

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Recorder:
    """The gateway's ASGI app, recording every `POST /v1/messages` on the way through."""

    app: ASGIApp
    exchanges: list[Exchange] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != MESSAGES:
            await self.app(scope, receive, send)
            return
        exchange = Exchange({name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]})
        self.exchanges.append(exchange)

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                exchange.body += message.get("body", b"")
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            await send(message)

        await self.app(scope, receiving, sending)


class ServedGateway:
    """A gateway on `config` served by uvicorn on a loopback port, in a thread of its own."""

    def __init__(self, config: Config) -> None:
        self.recorder = Recorder(create_app(Engine(Gateway(config))))
        self.port = free_port()
        server_config = uvicorn.Config(self.recorder, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(server_config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def exchanges(self) -> list[Exchange]:
        return self.recorder.exchanges

    def start(self) -> ServedGateway:
        self._thread.start()
        deadline = time.monotonic() + 60  # start-up connects the MCP servers
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the gateway did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(15)


def claude_env(base_url: str, home: Path, model: str, small_model: str) -> dict[str, str]:
    """The environment docs/fronts-and-clients.md tells Claude Code users to set, in a throwaway home, and nothing
    else of ours."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_AUTH_TOKEN": "unused",
        "ANTHROPIC_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": small_model,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    if os.geteuid() == 0:  # it refuses --dangerously-skip-permissions as root, except in a sandbox (a CI container)
        env["IS_SANDBOX"] = "1"
    return env


def run_claude(
    base_url: str,
    prompt: str,
    root: Path,
    *,
    model: str = "claude",
    small_model: str = "fast",
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    timeout: float = 120,
) -> tuple[dict[str, Any], Path]:
    """`claude -p PROMPT --output-format json` in `root/work`, with its home in `root/home`; its result object and
    the directory it worked in."""
    work, home = root / "work", root / "home"
    work.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    command = [str(client_program("claude")), "-p", prompt, "--output-format", "json"]
    command += ["--dangerously-skip-permissions", *args]
    environment = {**claude_env(base_url, home, model, small_model), **(env or {})}
    done = subprocess.run(command, cwd=work, env=environment, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"claude exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result, work
