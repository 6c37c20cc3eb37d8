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

from tests.support import make_config
from tests.support.anthropic import anthropic_gateway, sdk
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
