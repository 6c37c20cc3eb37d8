"""The Vercel AI SDK's default OpenAI provider (`openai(model)`: Responses, `store` on), pinned in tests/package.json,
through `toolsift serve` in a multi-step run where one step writes text and calls a tool: the SDK sends that text
back as an `item_reference`, which the gateway resolves from the caller's stored response."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ScriptedUpstream, completion, free_port, served_gateway
from tests.support.clients import node_modules, package_version

SCRIPT = Path(__file__).resolve().parents[2] / "support" / "ai_sdk_multistep.mjs"


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = {
        "providers": {"up": {"base_url": scripted.base_url, "api_key": "sk-up", "max_retries": 0}},
        "default_provider": "up",
        "tool_discovery": {"enabled": True, "semantic": {"enabled": False}},
        "auth": {"api_keys": ["key-sdk"]},
    }
    path = tmp_path_factory.mktemp("ai-sdk-gateway") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield f"{base}/v1"


def test_a_multi_step_run_with_text_and_a_tool_call_completes(
    scripted: ScriptedUpstream, gateway: str, tmp_path: Path
) -> None:
    script = tmp_path / SCRIPT.name  # run beside the SDKs' folder: Node resolves imports from the script's place
    script.write_text(SCRIPT.read_text())
    (tmp_path / "node_modules").symlink_to(node_modules())  # skips (or fails in CI) without the pinned SDK
    node = shutil.which("node")
    assert node is not None, "Node.js runs the SDK"
    scripted.script(
        completion("Let me look that up.", calls=[("lookup_order", {"id": "o-1"})]), completion("Order o-1 shipped.")
    )
    environment = {**os.environ, "GATEWAY_URL": gateway, "GATEWAY_KEY": "key-sdk", "MODEL": "gpt-4.1-mini",
                   "PROMPT": "Where is order o-1?"}  # fmt: skip
    finished = subprocess.run(
        [node, str(script)], env=environment, capture_output=True, text=True, timeout=60, check=False
    )
    version = package_version("@ai-sdk/openai")
    assert finished.returncode == 0, f"@ai-sdk/openai {version} failed:\n{finished.stderr[-3000:]}"
    result = json.loads(finished.stdout)
    assert result["text"] == "Order o-1 shipped." and result["steps"] == 2 and result["finishReason"] == "stop"
    first, second = result["sent"]
    assert first.get("store", True) is not False, "store is on"
    references = [item for item in second["input"] if item.get("type") == "item_reference"]
    assert references, "the step's text came back as an item_reference"
    resolved = scripted.requests[1]["messages"]
    assert resolved[1]["role"] == "assistant" and resolved[1]["content"] == "Let me look that up."
    assert resolved[1]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert resolved[2] == {"role": "tool", "content": "order o-1: shipped", "tool_call_id": "call_0_lookup_order"}
