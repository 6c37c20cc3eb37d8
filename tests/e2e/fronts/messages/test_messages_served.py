"""The Messages front over real HTTP: `toolsift serve` (uvicorn) with gateway keys, the official synchronous
`anthropic` SDK, and a scripted upstream on its own port speaking both OpenAI's and Anthropic's format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.support import SERVERS, ScriptedUpstream, completion, free_port, served_gateway

CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedUpstream]:
    server = ScriptedUpstream().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gateway(upstream: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = {
        "providers": {
            "up": {"base_url": upstream.base_url, "api_key": "sk-up", "max_retries": 0},
            "claude": {"type": "anthropic", "base_url": upstream.base_url, "api_key": "sk-ant", "max_retries": 0},
        },
        "models": {"fast": {"provider": "up", "model": "gpt-test"}, "sonnet": {"provider": "claude", "model": "c-4"}},
        "mcpServers": {
            "weather": {"command": "python", "args": [str(SERVERS / "weather.py")]},
            "finance": {"command": "python", "args": [str(SERVERS / "finance.py")], "defer_loading": True},
        },
        "auth": {"api_keys": ["gw-key"]},
        "tool_discovery": {"semantic": {"enabled": False}},
    }
    path: Path = tmp_path_factory.mktemp("messages") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def test_plain_over_http_through_an_openai_upstream(gateway: str, upstream: ScriptedUpstream) -> None:
    upstream.script(
        completion(calls=[("search_tools", {"query": "convert currency"})]),
        completion(calls=[("finance__convert_currency", CONVERT)]),
        completion("About 4.6 EUR."),
    )
    client = anthropic.Anthropic(base_url=gateway, api_key="gw-key", max_retries=0)
    reply = client.messages.create(model="fast", max_tokens=64, messages=[{"role": "user", "content": "5 USD in EUR?"}])
    assert reply.content[0].type == "text" and reply.content[0].text == "About 4.6 EUR."
    assert reply.usage.input_tokens == 30 and reply.usage.output_tokens == 15
    assert "EUR" in upstream.requests[2]["messages"][-1]["content"]
    with pytest.raises(anthropic.AuthenticationError) as refused:
        anthropic.Anthropic(base_url=gateway, api_key="nope", max_retries=0).messages.create(
            model="fast", max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
    assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


def test_streamed_over_http_through_an_anthropic_upstream(gateway: str, upstream: ScriptedUpstream) -> None:
    upstream.script(completion(calls=[("weather__get_current_weather", {"city": "Paris"})]), completion("Mild."))
    client = anthropic.Anthropic(base_url=gateway, api_key="gw-key", max_retries=0)
    with client.messages.stream(
        model="sonnet", max_tokens=64, messages=[{"role": "user", "content": "Paris?"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Mild." and final.stop_reason == "end_turn"
    result = upstream.requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "Paris" in json.dumps(result)  # the MCP tool ran in the gateway
    assert upstream.requests[0]["stream"] is True and upstream.requests[0]["model"] == "c-4"
    assert upstream.headers[0]["x-api-key"] == "sk-ant"


def test_the_sdks_betas_reach_an_anthropic_upstream_and_no_other(gateway: str, upstream: ScriptedUpstream) -> None:
    upstream.script(completion("Noted."), completion("Noted."))
    client = anthropic.Anthropic(base_url=gateway, api_key="gw-key", max_retries=0)
    management: Any = {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}]}
    for model in ("sonnet", "fast"):
        reply = client.beta.messages.create(
            model=model,
            max_tokens=64,
            betas=["context-management-2025-06-27"],
            context_management=management,
            messages=[{"role": "user", "content": "Remember: milk."}],
        )
        assert reply.content[0].type == "text" and reply.content[0].text == "Noted."
    native, chat = upstream.requests
    assert upstream.headers[0]["anthropic-beta"] == "context-management-2025-06-27"
    assert native["context_management"] == management and native["model"] == "c-4"
    assert "anthropic-beta" not in upstream.headers[1] and "context_management" not in chat
    assert chat["messages"] == [{"role": "user", "content": "Remember: milk."}]
