"""The engine's one entry, `Gateway.run`, driven without HTTP: an in-memory provider and in-memory MCP servers.

Every front and `run_task` come in through it, so what it does (route, tools with the session, loop, record,
remember) is checked here once, at the seam, rather than through each wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.common.errors import GatewayError, RequestRefused
from app.common.identity import Identity
from app.core.model import ChatRequest, Message, Options
from app.engine.answer import aggregate
from app.engine.caller import Caller
from app.engine.events import ContentDelta, Event, Finished, SearchDone
from app.engine.gateway import Gateway
from app.engine.record import RequestRecord
from tests.support import example_targets, make_config
from tests.support.engine import ScriptedProvider, calls, said

ALICE, BOB = Identity("alice"), Identity("bob")


def ask(text: str, model: str = "fast", **fields: Any) -> ChatRequest:
    return ChatRequest(model, [Message("user", text)], [], Options(), **fields)


@pytest.fixture
async def engine() -> AsyncIterator[tuple[Gateway, ScriptedProvider]]:
    config = make_config()
    provider = ScriptedProvider("up")
    targets = example_targets("weather", "notes", "finance", "textkit")
    gateway = Gateway(config, mcp_targets=targets, providers={"up": provider})
    await gateway.start()
    yield gateway, provider
    await gateway.stop()


async def events_of(gateway: Gateway, request: ChatRequest, caller: Caller) -> list[Event]:
    return [event async for event in gateway.run(request, caller)]


async def test_a_plain_answer_is_routed_and_recorded(engine: tuple[Gateway, ScriptedProvider]) -> None:
    gateway, provider = engine
    provider.script.append(said("Hello."))
    record = RequestRecord()
    answer = await aggregate(record.observe(gateway.run(ask("hi"), Caller(ALICE))))
    assert (record.provider, record.model) == ("up", "gpt-test-mini"), "the first event says where it was routed"
    assert answer.content == "Hello." and answer.stop.kind == "end"
    assert record.rounds == 1 and record.usage is not None and record.usage.total_tokens == 15
    assert provider.rounds[0].model == "gpt-test-mini"
    names = provider.tool_names(0)
    assert names[-1] == "search_tools" and "weather__get_alerts" in names, "loaded tools, then search_tools"
    assert not any(name.startswith(("notes__", "textkit__")) for name in names), "deferred tools are not sent"


async def test_a_search_loads_the_found_tool_for_the_next_round(engine: tuple[Gateway, ScriptedProvider]) -> None:
    gateway, provider = engine
    provider.script += [calls(("search_tools", {"query": "slugify text"})), said("Done.")]
    events = await events_of(gateway, ask("make a slug"), Caller(ALICE))
    assert next(event.found for event in events if isinstance(event, SearchDone))[0] == "textkit__slugify"
    assert "textkit__slugify" in provider.tool_names(1) and "textkit__slugify" not in provider.tool_names(0)
    assert isinstance(events[-1], Finished)
    assert "".join(event.text for event in events if isinstance(event, ContentDelta)) == "Done."


async def test_a_session_remembers_its_finds_for_its_own_caller_only(
    engine: tuple[Gateway, ScriptedProvider],
) -> None:
    gateway, provider = engine
    provider.script += [calls(("search_tools", {"tool_names": ["slugify"]})), said("first")]
    await events_of(gateway, ask("one"), Caller(ALICE, session_id="conv"))
    provider.script += [said("second"), said("third"), said("fourth")]
    await events_of(gateway, ask("two"), Caller(ALICE, session_id="conv"))
    assert provider.tool_names(2)[-1] == "textkit__slugify", "the transport's session id"
    await events_of(gateway, ask("three", session_id="conv"), Caller(ALICE))
    assert provider.tool_names(3)[-1] == "textkit__slugify", "a body's session id works alike"
    await events_of(gateway, ask("four"), Caller(BOB, session_id="conv"))
    assert "textkit__slugify" not in provider.tool_names(4), "another caller's session of the same id"


async def test_what_makes_a_run_impossible_is_raised_before_any_event(
    engine: tuple[Gateway, ScriptedProvider],
) -> None:
    gateway, provider = engine
    with pytest.raises(RequestRefused):
        await anext(gateway.run(ask("hi", tool_set="no-such-set"), Caller()))
    with pytest.raises(RequestRefused):
        await anext(gateway.run(ask("hi"), Caller(session_id="s" * 10_000)))
    assert provider.rounds == [], "nothing went upstream"


async def test_an_unknown_model_without_a_default_provider_is_refused() -> None:
    two = {"up": {"base_url": "http://upstream.test/v1"}, "other": {"base_url": "http://other.test/v1"}}
    gateway = Gateway(make_config(providers=two), mcp_targets={}, providers={"up": ScriptedProvider("up")})
    with pytest.raises(GatewayError) as unknown:
        await anext(gateway.run(ask("hi", model="nope"), Caller()))
    assert unknown.value.status == 404 and unknown.value.code == "model_not_found"
    await gateway.stop()


async def test_a_policy_refuses_a_call_and_the_model_is_told(engine: tuple[Gateway, ScriptedProvider]) -> None:
    gateway, provider = engine
    provider.script += [calls(("weather__get_alerts", {"region": "EU"})), said("Could not.")]
    answer = await aggregate(gateway.run(ask("alerts?"), Caller(), policy=lambda entry: "not today", max_rounds=3))
    assert answer.content == "Could not."
    told = [message for message in provider.rounds[1].messages if message.role == "tool"]
    assert "not today" in told[0].text()
