"""The gateway under test: its config, example MCP servers, request bodies, and `toolsift serve` in a process."""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from app.config import Config, parse_config
from tests.support.scripted import ScriptedUpstream

ROOT = Path(__file__).resolve().parent.parent.parent
SERVERS = ROOT / "examples" / "servers"
UPSTREAM = "http://upstream.test/v1"


def load_example(name: str) -> ModuleType:
    """Import an example server module by file path (fresh state every call)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", SERVERS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _shared_example(name: str) -> tuple[ModuleType, dict[str, Any]]:
    """An example server loaded once, with the state it starts with: its private module-level stores and counters
    (notes' `_notes` and `_next_id`, calendar's `_events`)."""
    module = load_example(name)
    state = {
        key: copy.deepcopy(value)
        for key, value in vars(module).items()
        if key.startswith("_") and not key.startswith("__") and isinstance(value, dict | list | set | int)
    }
    return module, state


def example_targets(*names: str) -> dict[str, Any]:
    """The example servers `names` as in-memory MCP targets for a Gateway. Building a server's tools is most of what
    starting a gateway costs, so each is built once for the run and handed out with its state as it started (what an
    earlier test stored in notes or calendar is gone); `load_example` gives a module of a test's own."""
    targets = {}
    for name in names:
        module, state = _shared_example(name)
        for key, value in state.items():
            setattr(module, key, copy.deepcopy(value))
        targets[name] = module.mcp
    return targets


def make_config(**overrides: Any) -> Config:
    raw: dict[str, Any] = {
        # Found tools join `tools` (the tests of the other deferrals, and of the defaults, say so themselves).
        "providers": {"up": {"base_url": UPSTREAM, "api_key": "sk-test-secret", "max_retries": 0, "deferral": "tools"}},
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
    # Tool-list changes are rebuilt at once unless a test paces them itself: at the default (1 s) a change, or a
    # server listed just after the first rebuild of a start began, waits a second for its rebuild.
    raw["mcp_limits"] = {"rebuild_interval_seconds": 0.01, **raw.get("mcp_limits", {})}
    return parse_config(raw, environ={})


def example_server(name: str, **options: Any) -> dict[str, Any]:
    """An example server in a config's `mcpServers`, run over stdio as `python examples/servers/<name>.py`."""
    return {"command": "python", "args": [str(SERVERS / f"{name}.py")], **options}


def gateway_config(
    upstream: ScriptedUpstream, *, claude: bool = True, up_key: str = "sk-up", **overrides: Any
) -> dict[str, Any]:
    """The config a served gateway's tests start from, on a scripted upstream: provider `up` (OpenAI's format, key
    `up_key`) with model `fast`, and unless `claude=False` provider `claude` (Anthropic's) with model `sonnet`, none
    retrying; the example servers weather (loaded) and finance (deferred); keyword search only. Any other keyword
    replaces the top-level key of its name."""
    base_url = upstream.base_url
    tools = {"deferral": "tools"}  # found tools join `tools` (tests of the other deferrals say so themselves)
    providers: dict[str, Any] = {"up": {"base_url": base_url, "api_key": up_key, "max_retries": 0, **tools}}
    models: dict[str, Any] = {"fast": {"provider": "up", "model": "gpt-test"}}
    if claude:
        claude_provider = {"type": "anthropic", "base_url": base_url, "api_key": "sk-ant", "max_retries": 0}
        providers["claude"] = {**claude_provider, **tools}
        models["sonnet"] = {"provider": "claude", "model": "c-4"}
    config: dict[str, Any] = {
        "providers": providers,
        "models": models,
        "mcpServers": {"weather": example_server("weather"), "finance": example_server("finance", defer_loading=True)},
        "tool_discovery": {"semantic": {"enabled": False}},
    }
    return config | overrides


GatewayFactory = Callable[..., Any]


def chat_body(*messages: Any, **extra: Any) -> dict[str, Any]:
    turns = [{"role": "user", "content": m} if isinstance(m, str) else m for m in messages]
    return {"model": "fast", "messages": turns or [{"role": "user", "content": "hi"}], **extra}


def demo_config_file(folder: Path) -> Path:
    """The bundled config.json as `make demo` serves it, written to `folder` with the example servers' paths made
    absolute; keyword search only, so that results do not depend on how far the background embedding of the tools
    has got (and the start is quicker). Each server records the tools it runs in `folder/calls.log`."""
    config = json.loads((ROOT / "config.json").read_text())
    for server in config["mcpServers"].values():
        server["args"] = [str(ROOT / arg) for arg in server["args"]]
        server["env"] = {"DEMO_CALL_LOG": str(folder / "calls.log")}
    config["tool_discovery"]["semantic"] = {"enabled": False}
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return path


@contextlib.contextmanager
def served_gateway(
    config_path: Path, port: int, command: str = "serve", env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """`toolsift serve` (or `command`) on `config_path` in its own process, as a user runs it, with `env` (by default
    this process's environment); yields its base URL once up."""
    toolsift = str(Path(sys.executable).parent / "toolsift")
    process = subprocess.Popen(
        [toolsift, command, "--config", str(config_path), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(env) if env is not None else os.environ.copy(),
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


def engine_request(body: dict[str, Any]) -> Any:
    """A chat-completions body as the engine's request, the way the chat front reads it."""
    from app.codecs.openai_chat.requests import chat_request
    from app.fronts.chat.wire import parse_chat_request

    return chat_request(*parse_chat_request(json.dumps(body).encode()))
