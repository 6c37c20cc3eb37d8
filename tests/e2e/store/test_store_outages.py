"""A Redis that stops or hangs under a running gateway, or a response larger than its caller's share: nothing is
claimed stored that a later read cannot find, and a request waits for at most one store timeout however many
store operations it makes."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import openai
import pytest
import redis

from bench.common import start_redis
from tests.support import Upstream, completion, free_port, make_config
from tests.support.responses import sdk

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")


class RedisServer:
    """A redis-server of the test's own, on a port that stays its own across a stop and a start."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = start_redis(self.port)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None


@pytest.fixture
def server() -> Iterator[RedisServer]:
    found = RedisServer()
    found.start()
    yield found
    found.stop()


async def eventually_stored(api: openai.AsyncOpenAI) -> openai.types.responses.Response:
    """A create once Redis is back (the circuit lets a probe through within its cooldown)."""
    for _ in range(100):
        made = await api.responses.create(model="fast", input="back again")
        if made.store:
            return made
        await asyncio.sleep(0.1)
    raise AssertionError("the store never came back")


async def test_redis_stopped_never_leaves_a_response_claimed_stored_but_lost(
    server: RedisServer, upstream: Upstream, gateway_factory: Any
) -> None:
    config = make_config(sessions={"redis_url": server.url})
    client, _ = await gateway_factory(config)
    api = sdk(client)
    upstream.script(*[completion(f"answer {n}") for n in range(100)])
    before = await api.responses.create(model="fast", input="before")
    assert before.store is True and (await api.responses.retrieve(before.id)).output_text == "answer 0"
    server.stop()
    while_down = [await api.responses.create(model="fast", input=f"down {n}") for n in range(3)]
    assert [made.output_text for made in while_down] == ["answer 1", "answer 2", "answer 3"], "answers still go out"
    server.start()
    after = await eventually_stored(api)
    assert (await api.responses.retrieve(after.id)).id == after.id
    for made in while_down:
        assert made.store is False, "claimed stored while Redis was down"
        with pytest.raises(openai.NotFoundError):
            await api.responses.retrieve(made.id)


async def test_a_hung_redis_costs_a_request_at_most_one_store_timeout(
    server: RedisServer, upstream: Upstream, gateway_factory: Any
) -> None:
    """Three limits, a session and a stored response: six store operations and more a request. With Redis hung
    (every client paused), each request's first operation waits for the timeout and opens the circuit; the rest fail
    at once, and the answers go out as with no Redis."""
    keys = [{"name": "alice", "key": "k-alice", "limits": {"requests_per_minute": 100, "tokens_per_day": 10**6,
                                                             "concurrent": 4}}]  # fmt: skip
    config = make_config(auth={"api_keys": keys}, sessions={"redis_url": server.url, "store_timeout_ms": 200})
    client, _ = await gateway_factory(config)
    api = sdk(client, "k-alice")
    upstream.script(*[completion(f"answer {n}") for n in range(10)])
    chat = await api.chat.completions.create(model="fast", messages=[{"role": "user", "content": "warm up"}])
    assert chat.choices[0].message.content == "answer 0"
    from app.store.redis import circuit  # every store on this Redis shares it

    shared = circuit(server.url)
    with redis.Redis.from_url(server.url) as admin:
        admin.execute_command("CLIENT", "PAUSE", "30000", "ALL")  # hung, as under DEBUG SLEEP (until it stops)
    for number in range(1, 4):
        failures = shared.failures
        chat = await api.chat.completions.create(
            model="fast",
            messages=[{"role": "user", "content": f"hung {number}"}],
            extra_headers={"X-Session-Id": "conversation"},
        )
        assert chat.choices[0].message.content == f"answer {number}"
        assert shared.failures - failures <= 1, "more than one store operation waited for the timeout"
    made = await api.responses.create(model="fast", input="hung")
    assert made.store is False and made.output_text == "answer 4"
    assert shared.refused > 0 and shared.open


async def test_a_response_over_the_callers_share_in_redis_is_not_claimed(
    server: RedisServer, upstream: Upstream, gateway_factory: Any
) -> None:
    config = make_config(sessions={"redis_url": server.url}, responses_store={"max_bytes_per_identity": 16384})
    client, _ = await gateway_factory(config)
    api = sdk(client)
    upstream.script(*[completion(f"answer {n}") for n in range(3)])
    kept = await api.responses.create(model="fast", input="small")
    raw = await api.responses.with_raw_response.create(model="fast", input="big " * 16384)
    big = raw.parse()
    assert big.output_text == "answer 1" and big.store is False and "x-toolsift-warning" in raw.headers
    with pytest.raises(openai.NotFoundError):
        await api.responses.retrieve(big.id)
    assert (await api.responses.retrieve(kept.id)).output_text == "answer 0", "nothing else of the caller's went"
    assert (await api.responses.create(model="fast", input="small again")).store is True, "Redis is not down"
