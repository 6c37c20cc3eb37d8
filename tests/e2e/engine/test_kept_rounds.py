"""No tool runs twice when a client tool sits between the gateway's own rounds and the answer.

"Convert 250 USD to EUR and run `echo hi` in the shell": the gateway searches and converts, then hands the client
its shell call. The client's next request carries only its own call and result. The gateway puts its earlier
rounds back before that call, upstream only, so the model (the demo model, which rebuilds its plan from what it is
sent, as an LLM does) answers with both results, and the finance server's own log counts one conversion. Through
the official SDKs on all three fronts, plain and streamed; in memory, and on two replicas sharing Redis with the
second request sent to the other replica.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from app.demo.server import DemoModel
from tests.support import SERVERS, free_port
from tests.support.clients import node_modules

PROMPT = "Convert 250 USD to EUR and run `echo hi` in the shell."
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
CONVERSION = "finance convert_currency"
TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
AI_SDK_SCRIPT = Path(__file__).resolve().parents[2] / "support" / "ai_sdk_shell.mjs"


@pytest.fixture(scope="module")
def demo_model() -> Iterator[str]:
    model = DemoModel().start()
    yield model.base_url
    model.stop()


@pytest.fixture(scope="module")
def calls_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("calls") / "calls.log"


def _serve(demo_model: str, calls_log: Path, folder: Path, redis_url: str | None, deferral: str) -> list[Any]:
    config: dict[str, Any] = {
        "providers": {"demo": {"base_url": demo_model, "max_retries": 0, "deferral": deferral}},
        "models": {"demo": {"provider": "demo", "model": "demo"}},
        "mcpServers": {
            "finance": {
                "command": "python",
                "args": [str(SERVERS / "finance.py")],
                "defer_loading": True,
                "env": {"DEMO_CALL_LOG": str(calls_log)},
            },
            "textkit": {"command": "python", "args": [str(SERVERS / "textkit.py")], "defer_loading": True},
        },
        "tool_discovery": {"semantic": {"enabled": False}},
    }
    if redis_url:
        config["sessions"] = {"redis_url": redis_url}
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    processes = []
    for _ in range(2 if redis_url else 1):
        port = free_port()
        command = [TOOLSIFT, "serve", "--config", str(path), "--port", str(port), "--log-level", "warning"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append((process, f"http://127.0.0.1:{port}"))
    return processes


def _ready(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).json().get("status") == "ok":
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{base} did not come up")


@pytest.fixture(scope="module", params=["memory", "redis", "tools"])
def gateways(
    request: pytest.FixtureRequest, demo_model: str, calls_log: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """(first, second): where the two requests go. In memory one gateway (the default `call_tool` deferral, or
    `tools`); on Redis two replicas, the second request sent to the other one."""
    if request.param == "redis" and shutil.which("redis-server") is None:
        pytest.skip("needs redis-server (.ci/run installs it)")
    redis_url = request.getfixturevalue("redis_url") if request.param == "redis" else None
    deferral = "tools" if request.param == "tools" else "call_tool"
    processes = _serve(demo_model, calls_log, tmp_path_factory.mktemp("kept-rounds"), redis_url, deferral)
    try:
        for _, base in processes:
            _ready(base)
        bases = [base for _, base in processes]
        yield bases[0], bases[-1]
    finally:
        for process, _ in processes:
            process.terminate()
            process.wait(30)


def _conversions(log: Path) -> int:
    return log.read_text().splitlines().count(CONVERSION) if log.exists() else 0


def _chat(first: str, second: str, stream: bool) -> str:
    tools: Any = [{"type": "function", "function": {"name": "Bash", "parameters": SCHEMA}}]
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    clients = [openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0) for base in (first, second)]

    def ask(client: openai.OpenAI) -> Any:
        if stream:
            with client.chat.completions.stream(model="demo", messages=messages, tools=tools) as events:
                return events.get_final_completion().choices[0]
        return client.chat.completions.create(model="demo", messages=messages, tools=tools).choices[0]

    choice = ask(clients[0])
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "Bash" and json.loads(call.function.arguments) == {"command": "echo hi"}
    messages.append(choice.message.model_dump(exclude_none=True, exclude={"parsed"}))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "hi"})
    return str(ask(clients[1]).message.content)


def _responses(first: str, second: str, stream: bool) -> str:
    tools: Any = [{"type": "function", "name": "Bash", "parameters": SCHEMA, "strict": False}]
    clients = [openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0) for base in (first, second)]

    def ask(client: openai.OpenAI, **body: Any) -> Any:
        if stream:
            with client.responses.stream(model="demo", tools=tools, **body) as events:
                return events.get_final_response()
        return client.responses.create(model="demo", tools=tools, **body)

    answer = ask(clients[0], input=PROMPT)
    call = next(item for item in answer.output if item.type == "function_call")
    assert call.name == "Bash" and json.loads(call.arguments) == {"command": "echo hi"}
    result = {"type": "function_call_output", "call_id": call.call_id, "output": "hi"}
    if stream:  # the whole conversation each time, nothing stored
        items = [{"role": "user", "content": PROMPT}, *(item.model_dump(exclude_none=True) for item in answer.output)]
        return str(ask(clients[1], input=[*items, result], store=False).output_text)
    return str(ask(clients[1], input=[result], previous_response_id=answer.id).output_text)


def _messages(first: str, second: str, stream: bool) -> str:
    tools: Any = [{"name": "Bash", "input_schema": SCHEMA}]
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    clients = [anthropic.Anthropic(base_url=base, api_key="none", max_retries=0) for base in (first, second)]

    def ask(client: anthropic.Anthropic) -> Any:
        if stream:
            with client.messages.stream(model="demo", max_tokens=1024, messages=messages, tools=tools) as events:
                return events.get_final_message()
        return client.messages.create(model="demo", max_tokens=1024, messages=messages, tools=tools)

    message = ask(clients[0])
    assert message.stop_reason == "tool_use"
    call = next(block for block in message.content if block.type == "tool_use")
    assert call.name == "Bash" and call.input == {"command": "echo hi"}
    messages.append({"role": "assistant", "content": [block.model_dump() for block in message.content]})
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "hi"}]})
    return "".join(block.text for block in ask(clients[1]).content if block.type == "text")


def _ai_sdk(api: str) -> Any:
    """The Vercel AI SDK, which runs its own tool and sends the next step itself (one gateway: its base URL)."""

    def run(first: str, second: str, stream: bool, folder: Path) -> str:
        script = folder / AI_SDK_SCRIPT.name  # beside the SDK's folder: Node resolves imports from there
        script.write_text(AI_SDK_SCRIPT.read_text())
        (folder / "node_modules").symlink_to(node_modules())
        node = shutil.which("node")
        assert node is not None, "Node.js runs the SDK"
        environment = {**os.environ, "GATEWAY_URL": f"{first}/v1", "MODEL": "demo", "PROMPT": PROMPT, "API": api,
                       "STREAM": "1" if stream else "0"}  # fmt: skip
        done = subprocess.run([node, str(script)], env=environment, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-3000:]
        return str(json.loads(done.stdout)["text"])

    return run


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("api", ["responses", "chat"])
def test_the_ai_sdk_gets_one_run_of_the_tool_around_its_own(
    gateways: tuple[str, str], calls_log: Path, tmp_path: Path, api: str, stream: bool
) -> None:
    before = _conversions(calls_log)
    answer = _ai_sdk(api)(*gateways, stream, tmp_path)
    assert "219.25" in answer and "It returned: hi" in answer, answer
    assert _conversions(calls_log) == before + 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("front", [_chat, _responses, _messages], ids=["chat", "responses", "messages"])
def test_a_tool_the_gateway_ran_before_a_client_call_runs_once(
    gateways: tuple[str, str], calls_log: Path, front: Any, stream: bool
) -> None:
    before = _conversions(calls_log)
    answer = front(*gateways, stream)
    assert "219.25" in answer and "It returned: hi" in answer, answer
    assert _conversions(calls_log) == before + 1
