"""Session memory: one cap for both ways of naming a session, memory bounded in bytes, and callers kept apart.

What a session remembers is the engine's (driven at `Gateway.run`); how a request names its session, and the
keys that keep callers apart, are the HTTP edge's (driven through the app)."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from app.common.identity import ANONYMOUS
from app.engine.caller import Caller
from app.engine.sessions import SessionKey, Sessions
from app.store import MemoryStore
from tests.support import Upstream, completion, make_config
from tests.support.engine import answer_text, ask, calls, said, started_engine

KEYS = ["gw-key-alice", "gw-key-bob"]


def sdk(client: Any, key: str = "unused") -> openai.AsyncOpenAI:
    """The official SDK, speaking to the gateway app through the test's in-memory HTTP client."""
    return openai.AsyncOpenAI(base_url="http://gw/v1", api_key=key, http_client=client, max_retries=0)


async def chat(client: openai.AsyncOpenAI, text: str, **extra: Any) -> str:
    answer = await client.chat.completions.create(model="fast", messages=[{"role": "user", "content": text}], **extra)
    return answer.choices[0].message.content or ""


@pytest.mark.parametrize("where", ["header", "body"])
async def test_session_id_header_and_body_share_one_cap(upstream: Upstream, gateway_factory: Any, where: str) -> None:
    client, _ = await gateway_factory(make_config(max_session_id_chars=40))
    api = sdk(client)
    upstream.script(completion("fits"))

    def naming(session: str) -> dict[str, Any]:
        if where == "header":
            return {"extra_headers": {"X-Session-Id": session}}
        return {"extra_body": {"session_id": session}}

    assert await chat(api, "hi", **naming("s" * 40)) == "fits"
    for size in (41, 1_000_000 if where == "body" else 8_000):
        with pytest.raises(openai.BadRequestError) as caught:
            await chat(api, "hi", **naming("s" * size))
        error = caught.value.body
        assert isinstance(error, dict)
        assert error["param"] == ("X-Session-Id" if where == "header" else "session_id")
        assert error["type"] == "invalid_request_error" and "at most 40" in error["message"]
    assert len(upstream.requests) == 1, "a refused session id costs no upstream call"


async def test_the_default_cap_is_256(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    with pytest.raises(openai.BadRequestError) as caught:
        await chat(sdk(client), "hi", extra_headers={"X-Session-Id": "s" * 257})
    assert "at most 256" in str(caught.value)


async def test_unique_long_session_ids_cannot_grow_memory() -> None:
    bound = 64 * 1024
    async with started_engine(make_config(sessions={"max_bytes": bound})) as (gateway, provider):
        store = gateway.sessions.store
        assert isinstance(store, MemoryStore)
        for index in range(300):
            provider.script += [calls(("search_tools", {"tool_names": ["slugify"]})), said("ok")]
            session = f"{index:04d}" + "x" * 252
            assert await answer_text(gateway, ask("slug"), Caller(session_id=session)) == "ok"
            assert store.bytes <= bound
        assert 0 < len(store) < 300, "the oldest sessions went first"
        provider.script.append(said("latest"))
        assert await answer_text(gateway, ask("again"), Caller(session_id="0299" + "x" * 252)) == "latest"
        assert provider.tool_names(-1)[-1] == "textkit__slugify", "the newest session is still remembered"


async def test_a_session_remembers_a_bounded_number_of_tools() -> None:
    async with started_engine(make_config(sessions={"max_tools": 2})) as (gateway, provider):
        for name in ("slugify", "convert_currency", "get_stock_quote"):
            provider.script += [calls(("search_tools", {"tool_names": [name]})), said("ok")]
            await answer_text(gateway, ask(name), Caller(session_id="many"))
        provider.script.append(said("done"))
        assert await answer_text(gateway, ask("what do I have"), Caller(session_id="many")) == "done"
    sent = provider.tool_names(-1)
    assert "finance__convert_currency" in sent and "finance__get_stock_quote" in sent
    assert "textkit__slugify" not in sent, "the oldest find was let go"


async def test_two_keys_with_the_same_session_id_never_mix(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": KEYS}))
    alice, bob = sdk(client, KEYS[0]), sdk(client, KEYS[1])
    same = {"extra_headers": {"X-Session-Id": "conversation-1"}}
    upstream.script(completion(calls=[("search_tools", {"tool_names": ["slugify"]})]), completion("found"))
    await chat(alice, "slug it", **same)
    upstream.script(completion("bob"), completion("alice"))
    await chat(bob, "what tools?", **same)
    assert "textkit__slugify" not in upstream.tool_names(2), "another key's session is not this one"
    await chat(alice, "and now?", **same)
    assert upstream.tool_names(3)[-1] == "textkit__slugify", "the key's own session still is"


async def test_session_store_expires_and_stays_bounded() -> None:
    now = [0.0]
    memory = MemoryStore(max_entries=2, max_bytes=16 * 1024 * 1024, clock=lambda: now[0])
    store = Sessions(memory, ttl_seconds=10)
    a, b, c = (SessionKey(ANONYMOUS, name) for name in "abc")
    await store.remember(a, ["t1"])
    await store.remember(a, ["t2", "t1"])
    assert list(await store.found(a)) == ["t1", "t2"]
    await store.remember(b, ["x"])
    await store.remember(c, ["y"])
    assert len(memory) == 2 and list(await store.found(a)) == []
    now[0] = 11
    assert list(await store.found(c)) == []
