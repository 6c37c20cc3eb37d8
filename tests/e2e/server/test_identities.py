"""Identities through the real server (`toolsift serve`, uvicorn) and the official SDKs: two keys with different
tool sets see different tools and cannot call each other's, on every front; a model outside a key's models, or
a tool set outside its own, is a 403 in the shape of the API called."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from mcp.shared.exceptions import MCPError

from tests.support import ScriptedUpstream, completion, free_port, gateway_config, served_gateway
from tests.support.mcp import mcp_client, names, text

WEATHER = ["weather__get_air_quality", "weather__get_alerts", "weather__get_current_weather", "weather__get_forecast"]
CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = gateway_config(
        scripted,
        default_provider="up",
        tool_sets={
            "weather_only": {"servers": {"weather": True}},
            "money": {"servers": {"finance": True}},
            "forecasts": {"servers": {"weather": ["get_forecast"]}},
        },
        auth={
            "api_keys": [
                {"name": "alice", "key": "gw-alice", "tool_set": "weather_only", "models": ["fast", "sonnet"]},
                {"name": "bob", "key": "gw-bob", "tool_set": "money"},
                "gw-plain",
            ]
        },
    )
    path: Path = tmp_path_factory.mktemp("identities") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def _openai(gateway: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway}/v1", api_key=key, max_retries=0)


def _tool_result(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def test_chat_completions_serve_each_identity_its_own_tools(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(completion(calls=[("finance__convert_currency", CONVERT)]), completion("no"))
    _openai(gateway, "gw-alice").chat.completions.create(model="fast", messages=[{"role": "user", "content": "x"}])
    assert sorted(scripted.tool_names(0)) == WEATHER, "alice sees her tool set only"
    assert "Unknown tool 'finance__convert_currency'" in _tool_result(scripted.requests[1]), "and cannot call bob's"

    scripted.script(completion(calls=[("weather__get_forecast", {"city": "Paris"})]), completion("no"))
    _openai(gateway, "gw-bob").chat.completions.create(model="fast", messages=[{"role": "user", "content": "x"}])
    assert scripted.tool_names(0) == ["search_tools"], "bob's tools are finance's, deferred behind search"
    assert "finance" in json.dumps(scripted.requests[0]["tools"]) and "weather" not in json.dumps(scripted.requests[0])
    assert "Unknown tool 'weather__get_forecast'" in _tool_result(scripted.requests[1])

    scripted.script(completion("all"))
    _openai(gateway, "gw-plain").chat.completions.create(model="fast", messages=[{"role": "user", "content": "x"}])
    assert sorted(scripted.tool_names(0)) == sorted([*WEATHER, "search_tools"]), "a plain key sees everything"


def test_a_request_narrows_its_identitys_tool_set_and_never_widens_it(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(completion("narrowed"))
    alice = _openai(gateway, "gw-alice")
    alice.chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "x"}], extra_body={"tool_set": "forecasts"}
    )
    assert scripted.tool_names(0) == ["weather__get_forecast"], "the intersection of her set and the asked one"
    with pytest.raises(openai.PermissionDeniedError) as refused:
        alice.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "x"}], extra_body={"tool_set": "money"}
        )
    assert refused.value.code == "tool_set_not_allowed"
    with pytest.raises(openai.PermissionDeniedError) as streamed:
        alice.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "x"}], extra_body={"tool_set": "money"}, stream=True
        )
    assert streamed.value.code == "tool_set_not_allowed"


def test_a_model_outside_an_identitys_models_is_403_on_each_front(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script()
    alice = _openai(gateway, "gw-alice")
    with pytest.raises(openai.PermissionDeniedError) as chat:
        alice.chat.completions.create(model="gpt-other", messages=[{"role": "user", "content": "x"}])
    assert chat.value.code == "model_not_allowed" and "gpt-other" in chat.value.message
    with pytest.raises(openai.PermissionDeniedError) as responses:
        alice.responses.create(model="gpt-other", input="x")
    assert responses.value.code == "model_not_allowed"
    claude = anthropic.Anthropic(base_url=gateway, api_key="gw-alice", max_retries=0)
    with pytest.raises(anthropic.PermissionDeniedError) as messages:
        claude.messages.create(model="gpt-other", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    assert messages.value.body["error"]["type"] == "permission_error"  # type: ignore[index]
    assert scripted.requests == [], "nothing went upstream"


def test_responses_and_messages_serve_each_identity_its_own_tools(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(completion(calls=[("finance__convert_currency", CONVERT)]), completion("no"))
    _openai(gateway, "gw-alice").responses.create(model="fast", input="convert")
    assert sorted(scripted.tool_names(0)) == WEATHER
    assert "Unknown tool 'finance__convert_currency'" in _tool_result(scripted.requests[1])

    scripted.script(completion(calls=[("weather__get_forecast", {"city": "Paris"})]), completion("no"))
    claude = anthropic.Anthropic(base_url=gateway, api_key="gw-bob", max_retries=0)
    claude.messages.create(model="sonnet", max_tokens=64, messages=[{"role": "user", "content": "weather?"}])
    sent = [tool["name"] for tool in scripted.requests[0]["tools"]]
    assert sent == ["search_tools"] and "weather" not in json.dumps(scripted.requests[0]["tools"])
    assert "Unknown tool 'weather__get_forecast'" in json.dumps(scripted.requests[1]["messages"][-1])


async def test_the_mcp_front_serves_each_identity_its_own_tools(gateway: str) -> None:
    async with mcp_client(f"{gateway}/mcp", "gw-alice") as alice, mcp_client(f"{gateway}/mcp", "gw-bob") as bob:
        assert await names(alice) == WEATHER
        assert await names(bob) == ["search_tools"]
        found = await bob.call_tool_mcp("search_tools", {"query": "convert currency"})
        assert "finance__convert_currency" in text(found) and "weather" not in text(found)
        refused = await alice.call_tool_mcp("finance__convert_currency", CONVERT)
        assert refused.is_error and "Unknown tool" in text(refused)
        refused = await bob.call_tool_mcp("weather__get_forecast", {"city": "Paris"})
        assert refused.is_error and "Unknown tool" in text(refused)
        ran = await bob.call_tool_mcp("finance__convert_currency", CONVERT)
        assert not ran.is_error and "EUR" in text(ran)
    async with mcp_client(f"{gateway}/mcp?tool_set=forecasts", "gw-alice") as narrowed:
        assert await names(narrowed) == ["weather__get_forecast"]
    with pytest.raises(MCPError) as widened:  # bob asks for weather: nothing in common with his own set
        async with mcp_client(f"{gateway}/mcp?tool_set=weather_only", "gw-bob") as bob:
            await bob.list_tools()
    assert "shares no tool with this key's tool set 'money'" in widened.value.message
    refused_http = httpx.post(
        f"{gateway}/mcp?tool_set=weather_only",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": "Bearer gw-bob", "Accept": "application/json, text/event-stream"},
    )
    assert refused_http.status_code == 403
    assert refused_http.json()["error"]["data"]["code"] == "tool_set_not_allowed"


def test_metrics_name_the_identity_never_its_key(gateway: str, scripted: ScriptedUpstream) -> None:
    scripted.script(completion("hello"))
    _openai(gateway, "gw-alice").chat.completions.create(model="fast", messages=[{"role": "user", "content": "x"}])
    metrics = httpx.get(f"{gateway}/metrics", headers={"Authorization": "Bearer gw-alice"}).text
    assert 'toolsift_identity_requests_total{identity="alice",status="200"}' in metrics
    tokens = re.search(r'toolsift_identity_tokens_total\{identity="alice"\} ([0-9.]+)', metrics)
    assert tokens is not None and float(tokens.group(1)) >= 15
    assert "gw-alice" not in metrics and "gw-bob" not in metrics
