"""The Messages front over real HTTP: `toolsift serve` (uvicorn) with gateway keys, the official synchronous
`anthropic` SDK, and a scripted upstream on its own port speaking both OpenAI's and Anthropic's format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.support import ScriptedUpstream, completion, free_port, gateway_config, served_gateway

CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = gateway_config(scripted, auth={"api_keys": ["gw-key"]})
    path: Path = tmp_path_factory.mktemp("messages") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def test_plain_over_http_through_an_openai_upstream(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(
        completion(calls=[("search_tools", {"query": "convert currency"})]),
        completion(calls=[("finance__convert_currency", CONVERT)]),
        completion("About 4.6 EUR."),
    )
    client = anthropic.Anthropic(base_url=gateway, api_key="gw-key", max_retries=0)
    reply = client.messages.create(model="fast", max_tokens=64, messages=[{"role": "user", "content": "5 USD in EUR?"}])
    assert reply.content[0].type == "text" and reply.content[0].text == "About 4.6 EUR."
    assert reply.usage.input_tokens == 30 and reply.usage.output_tokens == 15
    assert "EUR" in scripted.requests[2]["messages"][-1]["content"]
    with pytest.raises(anthropic.AuthenticationError) as refused:
        anthropic.Anthropic(base_url=gateway, api_key="nope", max_retries=0).messages.create(
            model="fast", max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
    assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


def test_streamed_over_http_through_an_anthropic_upstream(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(completion(calls=[("weather__get_current_weather", {"city": "Paris"})]), completion("Mild."))
    client = anthropic.Anthropic(base_url=gateway, api_key="gw-key", max_retries=0)
    with client.messages.stream(
        model="sonnet", max_tokens=64, messages=[{"role": "user", "content": "Paris?"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Mild." and final.stop_reason == "end_turn"
    result = scripted.requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "Paris" in json.dumps(result)  # the MCP tool ran in the gateway
    assert scripted.requests[0]["stream"] is True and scripted.requests[0]["model"] == "c-4"
    assert scripted.headers[0]["x-api-key"] == "sk-ant"


def test_the_sdks_betas_reach_an_anthropic_upstream_and_no_other(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(completion("Noted."), completion("Noted."))
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
    native, chat = scripted.requests
    assert scripted.headers[0]["anthropic-beta"] == "context-management-2025-06-27"
    assert native["context_management"] == management and native["model"] == "c-4"
    assert "anthropic-beta" not in scripted.headers[1] and "context_management" not in chat
    assert chat["messages"] == [{"role": "user", "content": "Remember: milk."}]
