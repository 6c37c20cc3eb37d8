"""Sessions in Redis: two gateways (replicas) share what a session discovered; a Redis outage costs nothing."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.support import Upstream, chat_body, completion, free_port, make_config

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")


async def test_two_replicas_share_a_session(redis_url: str, upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(sessions={"redis_url": redis_url, "ttl_seconds": 120})
    first, _ = await gateway_factory(config)
    second, _ = await gateway_factory(config)
    headers = {"X-Session-Id": "shared-conversation"}
    upstream.script(completion(calls=[("search_tools", {"tool_names": ["slugify"]})]), completion("done"))
    await first.post("/v1/chat/completions", json=chat_body("slug it"), headers=headers)
    upstream.script(completion("again"))
    await second.post("/v1/chat/completions", json=chat_body("and again"), headers=headers)
    assert upstream.tool_names(2)[-1] == "textkit__slugify", "the other replica knows what the session found"

    import redis

    client = redis.Redis.from_url(redis_url)
    assert 0 < client.ttl("toolsift:session:anonymous:shared-conversation") <= 120
    client.close()


async def test_a_redis_outage_never_fails_a_request(upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(sessions={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    client, _ = await gateway_factory(config)
    upstream.script(completion("fine"))
    response = await client.post("/v1/chat/completions", json=chat_body("x"), headers={"X-Session-Id": "s1"})
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "fine"


async def test_in_redis_two_keys_with_one_session_id_never_mix(
    redis_url: str, upstream: Upstream, gateway_factory: Any
) -> None:
    keys = ["gw-key-alice", "gw-key-bob"]
    client, _ = await gateway_factory(make_config(auth={"api_keys": keys}, sessions={"redis_url": redis_url}))
    as_alice = {"X-Session-Id": "same-id", "Authorization": f"Bearer {keys[0]}"}
    as_bob = {"X-Session-Id": "same-id", "Authorization": f"Bearer {keys[1]}"}
    upstream.script(completion(calls=[("search_tools", {"tool_names": ["slugify"]})]), completion("done"))
    await client.post("/v1/chat/completions", json=chat_body("slug it"), headers=as_alice)
    upstream.script(completion("bob"), completion("alice"))
    await client.post("/v1/chat/completions", json=chat_body("mine?"), headers=as_bob)
    assert "textkit__slugify" not in upstream.tool_names(2), "another key's session is not this one"
    await client.post("/v1/chat/completions", json=chat_body("mine?"), headers=as_alice)
    assert upstream.tool_names(3)[-1] == "textkit__slugify"


async def test_every_store_on_one_redis_shares_one_client(
    redis_url: str, upstream: Upstream, gateway_factory: Any
) -> None:
    """Sessions, stored responses, kept rounds, the MCP front's clients and the limits' counters: one Redis, one
    client (one connection pool) in the process; a second Redis for the counters is a second client."""
    auth = {"api_keys": [{"key": "key-one", "name": "one", "limits": {"requests_per_minute": 100}}]}
    config = make_config(sessions={"redis_url": redis_url}, auth=auth)
    client, gateway = await gateway_factory(config)
    upstream.script(completion("fine"))
    headers = {"Authorization": "Bearer key-one", "X-Session-Id": "s1"}
    response = await client.post("/v1/chat/completions", json=chat_body("x"), headers=headers)
    assert response.status_code == 200
    assert gateway.stores.clients == 1
    assert gateway.sessions.store._redis is gateway.limits.store._redis is gateway.responses.store._redis
    other = make_config(sessions={"redis_url": redis_url}, limits={"redis_url": redis_url.replace("/0", "/1")})
    _, second = await gateway_factory(other)
    assert second.stores.clients == 2
