"""An upstream's error reaches the client as the upstream gave it, in the client's own front's shape: its message
unchanged, its `param` and `code`, and its other fields (Anthropic's `details`, on which the SDKs act: a thread
request an upstream refuses with `thread_unsupported_request` makes the tool runner go on without threads). Which
upstream said it is the `x-toolsift-error-source` header, not words added to the message."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.support import completion, make_config
from tests.support.anthropic import CLAUDE_PROVIDER, anthropic_gateway, message, sdk
from tests.support.gateway import UPSTREAM
from tests.support.responses import sdk as openai_sdk

DETAILS = {"error_code": "thread_unsupported_request"}
REFUSAL = {"type": "error", "error": {"type": "invalid_request_error", "message": "threads are not supported",
                                      "details": DETAILS}}  # fmt: skip


async def test_an_anthropic_upstreams_error_keeps_its_details_on_every_front(
    anthropic_upstream: Any, gateway_factory: Any
) -> None:
    _, replies = anthropic_upstream
    replies += [httpx.Response(400, json=REFUSAL) for _ in range(3)]
    client = await anthropic_gateway(gateway_factory)
    ask: Any = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        await sdk(client).messages.create(model="sonnet", max_tokens=64, messages=ask)
    body: Any = refused.value.body
    assert body["error"] == {"type": "invalid_request_error", "message": "threads are not supported",
                             "details": DETAILS}  # fmt: skip
    assert refused.value.response.headers["x-toolsift-error-source"] == "upstream provider 'claude' answered HTTP 400"
    with pytest.raises(openai.BadRequestError) as chat_refused:
        await openai_sdk(client).chat.completions.create(model="sonnet", messages=ask)
    error: Any = chat_refused.value.body
    assert error["message"] == "threads are not supported" and error["details"] == DETAILS
    raw = await client.post("/v1/responses", json={"model": "sonnet", "input": "hi"})
    assert raw.status_code == 400 and raw.json()["error"]["details"] == DETAILS
    assert raw.json()["error"]["message"] == "threads are not supported"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_thread_a_chat_upstream_cannot_continue_is_refused_as_anthropic_refuses_it(
    stream: bool, upstream: Any, gateway_factory: Any
) -> None:
    """Sent on, a thread's context would be lost (the client sends only its new turn): refused with the error the
    SDKs' tool runners read as "go on without threads"."""
    client, _ = await gateway_factory(make_config())
    body = {"model": "fast", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}],
            "thread": {"type": "create"}, "stream": stream}  # fmt: skip
    answer = await client.post("/v1/messages", json=body, headers={"anthropic-beta": "message-threads-2026-08-12"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["details"] == {"error_code": "thread_unsupported_request"}
    assert answer.json()["type"] == "error" and not upstream.requests


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
          "additionalProperties": False}  # fmt: skip


async def test_structured_outputs_cross_formats_and_what_cannot_is_refused(
    upstream: Any, anthropic_upstream: Any, gateway_factory: Any
) -> None:
    """Anthropic's `output_config.format` reaches a chat upstream as `response_format`; a chat client's JSON schema
    reaches Anthropic as `output_config.format`; a `json_object` Anthropic has no form for is a 400, not dropped."""
    calls, replies = anthropic_upstream
    providers = {"up": {"base_url": UPSTREAM, "api_key": "sk-test", "max_retries": 0}, "claude": CLAUDE_PROVIDER}
    models = {"fast": {"provider": "up", "model": "gpt-test"}, "sonnet": {"provider": "claude", "model": "claude-x"}}
    client, _ = await gateway_factory(make_config(providers=providers, models=models))
    upstream.script(completion('{"city": "Paris"}'))
    body = {"model": "fast", "max_tokens": 64, "messages": [{"role": "user", "content": "capital of France?"}],
            "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}}  # fmt: skip
    answer = await client.post("/v1/messages", json=body)
    assert answer.status_code == 200 and answer.json()["content"][0]["text"] == '{"city": "Paris"}'
    sent = upstream.requests[0]["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "output", "schema": SCHEMA, "strict": True}}

    replies.append(httpx.Response(200, json=message([{"type": "text", "text": '{"city": "Paris"}'}], "end_turn")))
    chat = {"model": "sonnet", "messages": [{"role": "user", "content": "capital of France?"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": SCHEMA}}}  # fmt: skip
    answer = await client.post("/v1/chat/completions", json=chat)
    assert answer.status_code == 200, answer.text
    assert calls[-1]["body"]["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    refused = await client.post("/v1/chat/completions", json={**chat, "response_format": {"type": "json_object"}})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "response_format"
