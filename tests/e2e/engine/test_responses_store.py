"""Stored responses in Redis, shared by replicas and kept per caller."""

from __future__ import annotations

import shutil
from typing import Any

import openai
import pytest

from tests.support import Upstream, completion, make_config
from tests.support.responses import sdk


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")
async def test_replicas_share_responses_in_redis(redis_url: str, upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(sessions={"redis_url": redis_url}, auth={"api_keys": ["k1", "k2"]})
    (first, _), (second, _) = await gateway_factory(config), await gateway_factory(config)
    upstream.script(completion("Hi from one."), completion("Hi from two."))
    made = await sdk(first, "k1").responses.create(model="fast", input="hello")
    answer = await sdk(second, "k1").responses.create(model="fast", input="again", previous_response_id=made.id)
    assert answer.output_text == "Hi from two."
    assert upstream.requests[-1]["messages"][:2] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hi from one."},
    ]
    with pytest.raises(openai.NotFoundError):
        await sdk(second, "k2").responses.retrieve(made.id)
    await sdk(second, "k1").responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        await sdk(first, "k1").responses.retrieve(made.id)
