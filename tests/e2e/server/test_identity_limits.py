"""Identities' limits through two real replicas (`toolsift serve` twice) on one real Redis, with the official SDKs:
a limit reached on one replica is reached on the other, answered 429 with Retry-After in each front's shape (a
stream's tokens counted like a plain answer's); and one identity's flood of stored responses never evicts
another's, in memory or in Redis."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.support import ScriptedUpstream, completion, example_server, free_port, gateway_config, served_gateway

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")
USER = [{"role": "user", "content": "x"}]


def _config(scripted: ScriptedUpstream, **extra: Any) -> dict[str, Any]:
    return gateway_config(scripted, default_provider="up", mcpServers={"weather": example_server("weather")}, **extra)


@pytest.fixture(scope="module")
def replicas(
    scripted: ScriptedUpstream, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[str]]:
    keys = [
        {"name": "rpm", "key": "gw-rpm", "limits": {"requests_per_minute": 3}},
        {"name": "slow", "key": "gw-slow", "limits": {"concurrent": 1}},
        {"name": "tokens", "key": "gw-tokens", "limits": {"tokens_per_day": 20}},
        {"name": "streams", "key": "gw-streams", "limits": {"tokens_per_day": 20}},
    ]
    config = _config(scripted, auth={"api_keys": keys}, sessions={"redis_url": redis_url})
    path: Path = tmp_path_factory.mktemp("replicas") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as first, served_gateway(path, free_port()) as second:
        yield [first, second]


def _openai(base: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)


def _clear_of_a_minute_boundary() -> None:
    """Requests per minute are counted per calendar minute: start where the test's requests share one."""
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)


def test_requests_per_minute_are_shared_by_two_replicas(replicas: list[str], scripted: ScriptedUpstream) -> None:
    _clear_of_a_minute_boundary()
    scripted.fallback = completion("ok")
    first, second = replicas
    _openai(first, "gw-rpm").chat.completions.create(model="fast", messages=USER)
    _openai(second, "gw-rpm").responses.create(model="fast", input="x")
    anthropic.Anthropic(base_url=first, api_key="gw-rpm", max_retries=0).messages.create(
        model="sonnet", max_tokens=8, messages=USER
    )
    with pytest.raises(openai.RateLimitError) as chat:
        _openai(second, "gw-rpm").chat.completions.create(model="fast", messages=USER)
    assert chat.value.code == "rate_limit_exceeded" and "3 requests a minute" in chat.value.message
    assert 1 <= int(chat.value.response.headers["retry-after"]) <= 60
    with pytest.raises(anthropic.RateLimitError) as messages:
        anthropic.Anthropic(base_url=second, api_key="gw-rpm", max_retries=0).messages.create(
            model="sonnet", max_tokens=8, messages=USER
        )
    assert messages.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert "retry-after" in messages.value.response.headers
    mcp = httpx.post(
        f"{first}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": "Bearer gw-rpm", "Accept": "application/json, text/event-stream"},
    )
    assert mcp.status_code == 429 and mcp.json()["error"]["data"]["code"] == "rate_limit_exceeded"
    assert "retry-after" in mcp.headers
    stream = httpx.get(  # an MCP client's stream counts too, on the other replica
        f"{second}/mcp", headers={"Authorization": "Bearer gw-rpm", "Accept": "text/event-stream"}, timeout=10
    )
    assert stream.status_code == 429 and stream.json()["error"]["data"]["code"] == "rate_limit_exceeded"
    _openai(first, "gw-tokens").chat.completions.create(model="fast", messages=USER)  # another identity: its own


def test_concurrent_requests_are_leased_across_replicas(replicas: list[str], scripted: ScriptedUpstream) -> None:
    scripted.fallback = completion("ok")
    first, second = replicas
    scripted.delay = 2.0
    answers: list[str] = []

    def slow() -> None:
        reply = _openai(first, "gw-slow").chat.completions.create(model="fast", messages=USER)
        answers.append(reply.choices[0].message.content or "")

    running = threading.Thread(target=slow)
    running.start()
    try:
        time.sleep(1.0)
        with pytest.raises(openai.RateLimitError) as refused:
            _openai(second, "gw-slow").chat.completions.create(model="fast", messages=USER, stream=True)
        assert "1 requests at once" in refused.value.message
    finally:
        running.join()
        scripted.delay = 0.0
    assert answers == ["ok"]
    _openai(second, "gw-slow").chat.completions.create(model="fast", messages=USER)  # its slot was released


def test_tokens_per_day_are_counted_over_both_replicas(replicas: list[str], scripted: ScriptedUpstream) -> None:
    scripted.fallback = completion("ok")  # 15 tokens each
    first, second = replicas
    _openai(second, "gw-tokens").chat.completions.create(model="fast", messages=USER)  # 15 more, over 20 now
    with pytest.raises(openai.RateLimitError) as refused:
        _openai(first, "gw-tokens").chat.completions.create(model="fast", messages=USER)
    assert "20 upstream tokens a day" in refused.value.message
    assert int(refused.value.response.headers["retry-after"]) <= 86_400


def test_a_streaming_client_that_asks_no_usage_is_limited_like_a_plain_one(
    replicas: list[str], scripted: ScriptedUpstream
) -> None:
    """The gateway asks the upstream for every stream's usage (the upstream sends it only when asked), counts it,
    and keeps that chunk from a client that did not ask for it."""
    scripted.fallback = completion("ok")  # 15 tokens each
    first, second = replicas
    for base in (first, second):  # 15, then 30: over 20
        chunks = list(_openai(base, "gw-streams").chat.completions.create(model="fast", messages=USER, stream=True))
        assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == "ok"
        assert not any(chunk.usage for chunk in chunks)
    with pytest.raises(openai.RateLimitError) as refused:
        _openai(first, "gw-streams").chat.completions.create(model="fast", messages=USER, stream=True)
    assert "20 upstream tokens a day" in refused.value.message


def test_one_identitys_flood_never_evicts_anothers_stored_responses(
    scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory
) -> None:
    keys = [
        {"name": "keeper", "key": "gw-keeper"},
        {"name": "flood", "key": "gw-flood", "limits": {"stored_bytes": 16_384}},
    ]
    config = _config(scripted, auth={"api_keys": keys}, responses_store={"max_bytes": 65_536})
    path: Path = tmp_path_factory.mktemp("flood") / "config.json"
    path.write_text(json.dumps(config))
    scripted.fallback = completion("a stored answer " + "x" * 1000)
    with served_gateway(path, free_port()) as base:
        keeper, flood = _openai(base, "gw-keeper"), _openai(base, "gw-flood")
        kept = keeper.responses.create(model="fast", input="remember this")
        flooded = [flood.responses.create(model="fast", input="y" * 1000).id for _ in range(40)]
        assert keeper.responses.retrieve(kept.id).id == kept.id, "the flood did not evict another's"
        assert flood.responses.retrieve(flooded[-1]).id == flooded[-1]
        with pytest.raises(openai.NotFoundError):
            flood.responses.retrieve(flooded[0])  # its own oldest went, within its stored_bytes


def test_in_redis_one_identitys_flood_is_bounded_over_both_replicas(
    scripted: ScriptedUpstream, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With the responses in Redis, each identity's share is counted there, once for both replicas: the flood
    keeps only its latest within `max_bytes_per_identity`, and an identity's `stored_bytes` replaces that share."""
    keys = [
        {"name": "roomy", "key": "gw-roomy", "limits": {"stored_bytes": 1_000_000}},
        {"name": "flooder", "key": "gw-flooder"},
    ]
    config = _config(
        scripted,
        auth={"api_keys": keys},
        sessions={"redis_url": redis_url},
        responses_store={"max_bytes_per_identity": 16_384},
    )
    path: Path = tmp_path_factory.mktemp("redis-flood") / "config.json"
    path.write_text(json.dumps(config))
    scripted.fallback = completion("a stored answer " + "x" * 1000)
    with served_gateway(path, free_port()) as first, served_gateway(path, free_port()) as second:
        roomy = [_openai(first, "gw-roomy").responses.create(model="fast", input="z" * 2000).id for _ in range(8)]
        flooded = [
            _openai(base, "gw-flooder").responses.create(model="fast", input="y" * 1000).id
            for base in [first, second] * 20
        ]
        for id in roomy:  # about 40 kB: over the default share, within its own
            assert _openai(second, "gw-roomy").responses.retrieve(id).id == id, "the flood did not evict another's"
        assert _openai(first, "gw-flooder").responses.retrieve(flooded[-1]).id == flooded[-1]
        with pytest.raises(openai.NotFoundError):
            _openai(second, "gw-flooder").responses.retrieve(flooded[0])  # its oldest went, written on either
