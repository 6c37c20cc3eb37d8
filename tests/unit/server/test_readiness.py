"""/readyz tells whether a chat request can be served: a provider without its key cannot serve one."""

from __future__ import annotations

from typing import Any

from tests.support import Upstream, chat_body, make_config


async def test_readyz_is_503_while_no_provider_has_its_key(upstream: Upstream, gateway_factory: Any) -> None:
    unset = {"up": {"base_url": "http://upstream.test/v1", "api_key": "${UP_KEY}"}}
    client, _ = await gateway_factory(make_config(providers=unset))
    ready = await client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json() == {
        "status": "not ready",
        "problems": ["no provider can serve: provider 'up' has no API key (set UP_KEY)"],
    }
    chat = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert chat.status_code == 503 and "UP_KEY" in chat.json()["error"]["message"], "readyz agrees with a request"
    assert upstream.requests == []


async def test_readyz_is_200_when_one_provider_can_serve(gateway_factory: Any) -> None:
    keyless = {"base_url": "http://upstream.test/v1", "api_key": "${UP_KEY}"}
    for providers in (
        {"up": keyless, "other": {"base_url": "http://other.test/v1", "api_key": "sk-set"}},
        {"up": {**keyless, "forward_client_auth": True}},  # callers bring their own key
        {"up": {"base_url": "http://localhost:11434/v1"}},  # no key configured at all: a local server
    ):
        client, _ = await gateway_factory(make_config(providers=providers))
        ready = await client.get("/readyz")
        assert ready.status_code == 200, (providers, ready.text)
        assert ready.json() == {"status": "ready", "problems": []}


async def test_readyz_is_503_without_any_provider(gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(providers={}, models={}))
    ready = await client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["problems"] == ["no provider is configured"]
