"""Requests that call no upstream still count against an identity's requests a minute: a token count costs the
gateway parsing and counting (megabytes of it), a model look-up an answer; each is refused with 429 and
Retry-After in its own API's shape once the minute's requests are used, and a day's spent tokens refuse neither."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.support import make_config

HEADERS = {"Authorization": "Bearer gw-alice"}
COUNT = {"model": "sonnet", "messages": [{"role": "user", "content": "How many tokens is this?"}]}


def _tokens(count: int) -> Callable[[], Awaitable[int]]:
    """A request's estimate of its upstream tokens, as the engine gives it."""

    async def estimate() -> int:
        return count

    return estimate


async def _alice_with_her_days_tokens_spent(gateway_factory: Any) -> Any:
    """Two requests a minute; the day's tokens already spent, which refuses chats, not counts or look-ups."""
    limits = {"requests_per_minute": 2, "tokens_per_day": 10}
    client, gateway = await gateway_factory(
        make_config(auth={"api_keys": [{"name": "alice", "key": "gw-alice", "limits": limits}]})
    )
    admission = await gateway.limits.admit(gateway.identities.get("alice"), counted=False, reserve=_tokens(50))
    await admission.settle(50)
    return client


async def test_a_third_token_count_in_a_minute_is_refused_in_anthropics_shape(gateway_factory: Any) -> None:
    client = await _alice_with_her_days_tokens_spent(gateway_factory)
    answers = [await client.post("/v1/messages/count_tokens", json=COUNT, headers=HEADERS) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[0].json()["input_tokens"] > 0
    refused = answers[2]
    assert refused.json()["type"] == "error" and refused.json()["error"]["type"] == "rate_limit_error"
    assert 1 <= int(refused.headers["retry-after"]) <= 60


async def test_model_look_ups_count_against_requests_a_minute(gateway_factory: Any) -> None:
    client = await _alice_with_her_days_tokens_spent(gateway_factory)
    answers = [await client.get(path, headers=HEADERS) for path in ("/v1/models", "/v1/models/fast", "/v1/models")]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    refused = answers[2].json()["error"]
    assert refused["type"] == "rate_limit_error" and refused["code"] == "rate_limit_exceeded"
    assert "retry-after" in answers[2].headers
    lookup = await client.get("/v1/models/fast", headers=HEADERS)
    assert lookup.status_code == 429
