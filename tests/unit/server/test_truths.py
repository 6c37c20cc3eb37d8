"""What the gateway says about itself is true: a chat refused for a missing key saves no tokens, the Messages front
reports that refusal as Anthropic would (no retry can fix it), a failed request's log line says why, and the
endpoints docs/security.md calls open without a key are the ones that are."""

from __future__ import annotations

import json
import logging
from typing import Any

import anthropic
import pytest

from tests.support import ROOT, Upstream, chat_body, make_config
from tests.support.anthropic import sdk

KEYLESS = {"up": {"base_url": "http://upstream.test/v1", "api_key": "${UP_KEY}"}}


async def test_a_chat_refused_for_a_missing_key_saves_no_tokens(upstream: Upstream, gateway_factory: Any) -> None:
    client, gateway = await gateway_factory(make_config(providers=KEYLESS))
    refused = await client.post("/v1/chat/completions", json=chat_body("convert 250 USD to EUR"))
    assert refused.status_code == 503 and upstream.requests == []
    exposition = (await client.get("/metrics")).text
    assert "toolsift_tool_tokens_saved_total 0.0" in exposition
    assert 'toolsift_requests_total{status="503",stream="false"} 1.0' in exposition
    assert gateway.recent.latest()[0]["tokens_saved"] == 0, "the console's recent requests agree"


async def test_messages_without_the_upstream_key_is_an_authentication_error_not_overload(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory(make_config(providers=KEYLESS))
    asked: list[Any] = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.AuthenticationError) as refused:  # 401: the SDKs do not retry it
        await sdk(client).messages.create(model="fast", max_tokens=8, messages=asked)
    error = refused.value.body
    assert isinstance(error, dict) and error["error"]["type"] == "authentication_error"
    assert "Provider 'up' has no API key: set UP_KEY in the gateway's environment" in error["error"]["message"]
    with pytest.raises(anthropic.AuthenticationError):
        async with sdk(client).messages.stream(model="fast", max_tokens=8, messages=asked) as stream:
            await stream.get_final_message()
    chat = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert chat.status_code == 503, "the chat front keeps its documented 503"
    assert upstream.requests == []


async def test_the_log_line_of_a_failed_request_says_why(
    gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolsift.http")
    client, _ = await gateway_factory()
    bad = await client.post("/v1/chat/completions", json={"model": "fast", "messages": [], "n": 2})
    assert bad.status_code == 400
    line = next(record.getMessage() for record in caplog.records if record.getMessage().startswith("request "))
    assert " status=400 " in line
    error = bad.json()["error"]
    reason = f"{error['code']}: {error['message']}" if error["code"] else error["message"]
    assert line.endswith(f"error={json.dumps(reason)}"), line
    record = next(record for record in caplog.records if record.getMessage().startswith("request "))
    assert record.fields["error"] == reason  # type: ignore[attr-defined]


async def test_probes_and_the_console_page_answer_without_a_key_as_the_readme_says(gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": ["gw-key"], "admin_keys": ["admin-key"]}))
    for path in ("/healthz", "/readyz", "/console"):
        assert (await client.get(path)).status_code == 200, path
    for path in ("/metrics", "/v1/models", "/admin/servers"):
        assert (await client.get(path)).status_code == 401, path
    readme = (ROOT / "docs" / "security.md").read_text()
    security = " ".join(readme[readme.index("- **Gateway keys.**") :].split("\n- **", 1)[0].split())
    assert "except the probes `/healthz` and `/readyz`" in security and "the console's page" in security
