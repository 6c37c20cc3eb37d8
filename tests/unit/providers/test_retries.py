"""Upstream resilience: retries with backoff and Retry-After within a deadline, no retry after bytes, fallbacks."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
import pytest

from app.config import parse_config
from tests.support import FIRST_CHUNK, UPSTREAM, Upstream, chat_body, completion, events, mock_upstreams, sse_reply

SECOND = "http://second.test/v1"


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the providers' backoff delays instead of sleeping them; every other sleep (a stream's keep-alive
    timer) is real."""
    recorded: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        if sys._getframe(1).f_globals.get("__name__") != "app.providers.base":
            await real_sleep(seconds)
            return
        recorded.append(seconds)

    monkeypatch.setattr("app.providers.base.asyncio.sleep", fake_sleep)
    return recorded


def config(**provider: Any) -> Any:
    return parse_config(
        {
            "providers": {
                "up": {"base_url": UPSTREAM, "api_key": "k", "max_retries": 3, "retry_base_delay": 0.1, **provider},
                "second": {"base_url": SECOND, "api_key": "k2", "max_retries": 0},
            },
            "default_provider": "up",
            "models": {
                "main": {"provider": "up", "model": "big-model", "fallbacks": ["backup"]},
                "backup": {"provider": "second", "model": "small-model"},
            },
        },
        environ={},
    )


def busy(status: int = 503, **headers: str) -> httpx.Response:
    return httpx.Response(
        status, headers=headers, json={"error": {"message": f"busy {status}", "type": "server_error"}}
    )


async def test_transient_failures_are_retried_then_succeed(
    upstream: Upstream, gateway_factory: Any, sleeps: list[float]
) -> None:
    client, _ = await gateway_factory(config(), targets={})
    upstream.script(busy(503), httpx.ConnectError("refused"), busy(429), completion("finally"))
    response = await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "plain"})
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "finally"
    assert len(upstream.requests) == 4 and len(sleeps) == 3
    assert all(0 <= delay <= 0.1 * 2**attempt for attempt, delay in enumerate(sleeps)), "exponential backoff, jittered"


async def test_retry_after_is_honoured(upstream: Upstream, gateway_factory: Any, sleeps: list[float]) -> None:
    client, _ = await gateway_factory(config(), targets={})
    upstream.script(busy(429, **{"retry-after": "2"}), busy(429, **{"retry-after-ms": "1500"}), completion("ok"))
    response = await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "plain"})
    assert response.status_code == 200
    assert sleeps[0] >= 2.0 and sleeps[1] >= 1.5


async def test_retries_stop_at_the_limit_and_at_the_deadline(
    upstream: Upstream, gateway_factory: Any, sleeps: list[float]
) -> None:
    client, _ = await gateway_factory(config(max_retries=2), targets={})
    upstream.script(busy(502), busy(502), busy(502), completion("never"))
    response = await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "plain"})
    assert response.status_code == 502 and "busy 502" in response.json()["error"]["message"]
    assert len(upstream.requests) == 3
    upstream.replies.clear()

    client, _ = await gateway_factory(config(deadline=5), targets={})
    upstream.script(busy(429, **{"retry-after": "60"}), completion("never"))
    response = await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "plain"})
    assert response.status_code == 429, "a wait past the deadline is not attempted"
    assert len(upstream.requests) == 4


async def test_client_errors_are_not_retried(upstream: Upstream, gateway_factory: Any, sleeps: list[float]) -> None:
    client, _ = await gateway_factory(config(), targets={})
    upstream.script(httpx.Response(400, json={"error": {"message": "bad tool schema"}}), completion("never"))
    response = await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "plain"})
    assert response.status_code == 400 and len(upstream.requests) == 1 and sleeps == []


async def test_streams_retry_before_the_first_byte_but_never_after(
    upstream: Upstream, gateway_factory: Any, sleeps: list[float]
) -> None:
    client, _ = await gateway_factory(config(), targets={})
    upstream.script(busy(503), sse_reply(["hello"]))
    response = await client.post("/v1/chat/completions", json={**chat_body("x", stream=True), "model": "plain"})
    assert response.status_code == 200 and len(upstream.requests) == 2

    broken = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=FIRST_CHUNK + b"data: {oops\n\n"
    )
    upstream.script(broken, sse_reply(["never"]))
    response = await client.post("/v1/chat/completions", json={**chat_body("x", stream=True), "model": "plain"})
    assert events(response.text)[-1]["error"]["code"] == "upstream_invalid_response"
    assert len(upstream.requests) == 3, "bytes had reached the client: no second attempt"


async def test_fallback_model_takes_over_on_retryable_errors(
    upstream: Upstream, gateway_factory: Any, sleeps: list[float]
) -> None:

    client, _ = await gateway_factory(config(max_retries=1), targets={})
    upstream.script(busy(503), busy(503))
    with mock_upstreams() as second:
        seen: list[dict[str, Any]] = []

        def answer(request: httpx.Request) -> httpx.Response:
            seen.append(json.loads(request.content))
            return httpx.Response(200, json=completion("from the backup"))

        second.post(f"{SECOND}/chat/completions").mock(side_effect=answer)
        second.post(f"{UPSTREAM}/chat/completions").mock(side_effect=upstream._answer)
        response = await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "main"})
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "from the backup"
    assert [r["model"] for r in upstream.requests] == ["big-model", "big-model"]
    assert seen[0]["model"] == "small-model"


async def test_forward_client_auth_sends_the_callers_key_instead(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(config(forward_client_auth=True), targets={})
    upstream.script(completion("ok"))
    body = {**chat_body("x"), "model": "plain"}
    response = await client.post("/v1/chat/completions", json=body, headers={"Authorization": "Bearer caller-key"})
    assert response.status_code == 200
    assert upstream.headers[0]["authorization"] == "Bearer caller-key", "the caller's key, not the configured one"
    missing = await client.post("/v1/chat/completions", json=body)
    assert missing.status_code == 401 and "Authorization: Bearer" in missing.json()["error"]["message"]
    assert len(upstream.requests) == 1


async def test_a_fallback_outside_the_identitys_models_is_never_used(
    upstream: Upstream, gateway_factory: Any, sleeps: list[float]
) -> None:
    models = {
        "fast2": {"provider": "up", "model": "small-model", "fallbacks": ["smart"]},
        "smart": {"provider": "second", "model": "big-model"},
    }
    keys = [{"name": "alice", "key": "gw-alice", "models": ["fast2"]}, {"name": "bob", "key": "gw-bob"}]
    settings = parse_config(
        {
            "providers": {
                "up": {"base_url": UPSTREAM, "api_key": "k", "max_retries": 0},
                "second": {"base_url": SECOND, "api_key": "k2", "max_retries": 0},
            },
            "models": models,
            "auth": {"api_keys": keys},
        },
        environ={},
    )
    client, _ = await gateway_factory(settings, targets={})
    with mock_upstreams() as mocked:
        smart = mocked.post(f"{SECOND}/chat/completions").mock(
            return_value=httpx.Response(200, json=completion("smart"))
        )
        mocked.post(f"{UPSTREAM}/chat/completions").mock(side_effect=upstream._answer)
        for stream in (False, True):
            upstream.script(busy(503))
            body = {**chat_body("x", stream=stream), "model": "fast2"}
            answer = await client.post("/v1/chat/completions", json=body, headers={"authorization": "Bearer gw-alice"})
            assert answer.status_code == 503 and "busy 503" in answer.text and "smart" not in answer.text
        assert not smart.called, "alice's key does not open `smart`: its upstream is never called"
        upstream.script(busy(503))
        body = {**chat_body("x"), "model": "fast2"}
        answer = await client.post("/v1/chat/completions", json=body, headers={"authorization": "Bearer gw-bob"})
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "smart"
        assert smart.call_count == 1, "a key allowed every model still falls back"
