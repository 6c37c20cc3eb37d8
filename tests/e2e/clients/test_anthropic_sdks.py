"""The Anthropic SDKs' own helpers through the gateway, on an Anthropic upstream and on a chat upstream.

The tool runners (Python `client.beta.messages.tool_runner`, the release in tests/sdk-venv; TypeScript
`client.beta.messages.toolRunner`, pinned in tests/package.json) open a message thread and, on the next turn, send
only the new tool results. A thread neither upstream serves is refused with `details.error_code
thread_unsupported_request` (the chat upstream's by the gateway, the Anthropic one's by the upstream, its body kept),
and the runners go on without threads, resending the whole conversation: the two-tool task finishes either way.
`messages.parse(output_format=...)` gets JSON it parses; OpenAI's `responses.parse` does the same on an Anthropic
upstream."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from tests.support import ROOT, ScriptedUpstream, completion, free_port, served_gateway
from tests.support.clients import npm_package, package_version
from tests.support.gateway import gateway_config

# The environment `make clients` makes; `make check-clients` names one with the newest release instead.
SDK_PYTHON = Path(os.environ.get("TOOLSIFT_ANTHROPIC_PYTHON") or ROOT / "tests" / "sdk-venv" / "bin" / "python")
SCRIPTS = ROOT / "tests" / "support"
MODELS = {"chat": "fast", "anthropic": "sonnet"}  # upstreams of gateway_config: `up` (chat) and `claude`
ANSWER = "Sunny in Paris; 10 USD is 9.20 EUR."
TWO_TOOLS = (("get_weather", {"city": "Paris"}), ("convert", {"amount": 10, "currency": "EUR"}))


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("anthropic-sdks") / "config.json"
    path.write_text(json.dumps(gateway_config(scripted)))
    with served_gateway(path, free_port()) as base:
        yield base


def _python(mode: str, gateway: str, model: str) -> dict[str, Any]:
    if not SDK_PYTHON.exists():
        message = "the Anthropic SDK environment is not installed: run `make clients`"
        pytest.fail(message) if os.environ.get("CI") == "true" else pytest.skip(message)
    command = [str(SDK_PYTHON), "-I", str(SCRIPTS / "anthropic_sdk_client.py"), mode]  # -I: not beside our modules
    return _run(command, gateway, model, "anthropic 2.14.0")


def _typescript(mode: str, gateway: str, model: str, folder: Path) -> dict[str, Any]:
    script = folder / "anthropic_sdk_client.mjs"  # beside the SDK's folder: Node resolves imports from there
    script.write_text((SCRIPTS / script.name).read_text())
    (folder / "node_modules").symlink_to(npm_package("@anthropic-ai/sdk"))
    node = shutil.which("node")
    assert node is not None, "Node.js runs the SDK"
    return _run([node, str(script), mode], gateway, model, f"@anthropic-ai/sdk {package_version('@anthropic-ai/sdk')}")


def _run(command: list[str], gateway: str, model: str, sdk: str) -> dict[str, Any]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("ANTHROPIC_")}
    environment |= {"GATEWAY_URL": gateway, "MODEL": model}
    finished = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60, check=False)
    assert finished.returncode == 0, f"{sdk} failed:\n{finished.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(finished.stdout)
    return result


@pytest.mark.parametrize("upstream", list(MODELS))
@pytest.mark.parametrize("sdk", ["python", "typescript"])
def test_a_tool_runner_finishes_a_two_tool_task(
    scripted: ScriptedUpstream, gateway: str, tmp_path: Path, sdk: str, upstream: str
) -> None:
    scripted.requests.clear()
    scripted.script(completion(calls=list(TWO_TOOLS)), completion(ANSWER))
    model = MODELS[upstream]
    result = _python("runner", gateway, model) if sdk == "python" else _typescript("runner", gateway, model, tmp_path)
    assert result == {"text": ANSWER, "ran": ["get_weather", "convert"]}
    sent = scripted.requests
    if upstream == "anthropic":  # the thread went up as it came, was refused, and the runner went on without
        assert sent[0]["thread"] == {"type": "create"}
        sent = sent[1:]
    assert len(sent) == 2 and all("thread" not in body for body in sent)
    last = json.dumps(sent[1]["messages"])
    assert "Weather in Paris" in last and "Sunny, 22C in Paris" in last and "9.20 EUR" in last, "the whole context"


@pytest.mark.parametrize("sdk", ["python", "typescript"])
def test_messages_parse_gets_a_parsed_object_on_a_chat_upstream(
    scripted: ScriptedUpstream, gateway: str, tmp_path: Path, sdk: str
) -> None:
    scripted.requests.clear()
    scripted.script(completion('{"name": "Ada Lovelace", "age": 36}'))
    model = MODELS["chat"]
    result = _python("parse", gateway, model) if sdk == "python" else _typescript("parse", gateway, model, tmp_path)
    assert result == {"parsed": {"name": "Ada Lovelace", "age": 36}}
    sent = scripted.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and set(sent["json_schema"]["schema"]["required"]) == {"name", "age"}


class Person(BaseModel):
    name: str
    age: int


def test_responses_parse_gets_a_parsed_object_on_an_anthropic_upstream(
    scripted: ScriptedUpstream, gateway: str
) -> None:
    scripted.requests.clear()
    scripted.script(completion('{"name": "Ada Lovelace", "age": 36}'))
    client = openai.OpenAI(base_url=f"{gateway}/v1", api_key="unused", max_retries=0)
    parsed = client.responses.parse(model=MODELS["anthropic"], input="Ada Lovelace was 36.", text_format=Person)
    assert parsed.output_parsed == Person(name="Ada Lovelace", age=36)
    sent = scripted.requests[0]["output_config"]["format"]
    assert sent["type"] == "json_schema" and sent["schema"]["required"] == ["name", "age"]
