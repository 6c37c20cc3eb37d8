"""The Redis that holds the limits' counters must not evict them: under `volatile-*` policies Redis evicts exactly
the keys with a time to live (every counter), under `allkeys-*` any key, and an identity's day budget would reset.
Start-up and `toolsift check` say so, once, naming the policy; `noeviction` is quiet."""

from __future__ import annotations

import argparse
import logging
import shutil
from collections.abc import Iterator

import pytest
from redis import Redis

from app.cli.inspect import check
from app.engine.gateway import Gateway
from app.store import Stores
from app.store.eviction import eviction_problem
from tests.support import make_config

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")


@pytest.fixture
def policy(redis_url: str) -> Iterator[Redis]:
    with Redis.from_url(redis_url) as client:
        yield client
        client.config_set("maxmemory-policy", "noeviction")


@pytest.mark.parametrize("name", ["volatile-lru", "allkeys-lru", "volatile-ttl"])
async def test_a_policy_that_evicts_is_named(redis_url: str, policy: Redis, name: str) -> None:
    policy.config_set("maxmemory-policy", name)
    stores = Stores()
    problem = await eviction_problem(stores.client(redis_url))
    assert problem is not None and name in problem and "noeviction" in problem and "store.counters_redis_url" in problem
    policy.config_set("maxmemory-policy", "noeviction")
    assert await eviction_problem(stores.client(redis_url)) is None
    await stores.aclose()


async def test_start_up_warns_once_about_the_counters_redis(
    redis_url: str, policy: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    policy.config_set("maxmemory-policy", "volatile-lru")
    gateway = Gateway(make_config(mcpServers={}, tool_sets={}, limits={"redis_url": redis_url}))
    with caplog.at_level(logging.WARNING, "toolsift.limits"):
        await gateway.start()
        await gateway.stop()
    warned = [record for record in caplog.records if "maxmemory-policy volatile-lru" in record.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING


async def test_check_warns_about_the_counters_redis(
    redis_url: str, policy: Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    policy.config_set("maxmemory-policy", "allkeys-lru")
    assert (
        await check(make_config(mcpServers={}, tool_sets={}, sessions={"redis_url": redis_url}), argparse.Namespace())
        == 0
    )
    assert "warning: the limits' Redis has 'maxmemory-policy allkeys-lru'" in capsys.readouterr().err
