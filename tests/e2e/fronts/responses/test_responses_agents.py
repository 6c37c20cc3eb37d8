"""The OpenAI SDK and the Agents SDK against `toolsift serve` over real uvicorn, with gateway keys and a real stdio MCP
server."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from agents import Runner

from tests.support import SERVERS, ScriptedUpstream, completion, free_port, served_gateway
from tests.unit.fronts.responses.test_responses_agents import agent_on, rounds


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = {
        "providers": {"up": {"base_url": scripted.base_url, "api_key": "sk-up", "max_retries": 0}},
        "models": {"fast": {"provider": "up", "model": "gpt-test-mini"}},
        "mcpServers": {
            "notes": {"command": sys.executable, "args": [str(SERVERS / "notes.py")], "defer_loading": True}
        },
        "tool_discovery": {"enabled": True, "semantic": {"enabled": False}},
        "auth": {"api_keys": ["key-served"]},
    }
    path = Path(tmp_path_factory.mktemp("responses")) / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def test_served_gateway_with_the_sdk_and_the_agents_sdk(scripted: ScriptedUpstream, gateway: str) -> None:
    api = openai.OpenAI(base_url=f"{gateway}/v1", api_key="key-served", max_retries=0)
    scripted.script(*rounds()[:2], completion("Saved.", usage=(5, 1)))
    created = api.responses.create(model="fast", input="note milk")
    assert created.output_text == "Saved." and created.usage is not None and created.usage.total_tokens == 39
    assert api.responses.retrieve(created.id).output_text == "Saved."
    scripted.script(completion("Streamed over HTTP."))
    with api.responses.stream(model="fast", input="more", previous_response_id=created.id) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert final.output_text == "Streamed over HTTP."
    assert scripted.requests[-1]["messages"][:2] == [
        {"role": "user", "content": "note milk"},
        {"role": "assistant", "content": "Saved."},
    ]
    scripted.script(completion(calls=[("lookup_order", {"order_id": "o-2"})]), completion("o-2 shipped."))
    agents_api = openai.AsyncOpenAI(base_url=f"{gateway}/v1", api_key="key-served", max_retries=0)
    import asyncio

    result = asyncio.run(Runner.run(agent_on(agents_api), "where is o-2?"))
    assert result.final_output == "o-2 shipped."
