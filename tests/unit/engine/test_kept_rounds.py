"""Rounds the gateway ran before a client's tool call, kept for the request that brings that call's result: put
back before the call upstream (per caller, in the route's deferral format), or, where they are gone, a system note
that says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.common.identity import Identity
from app.core.model import ChatRequest, ClientTool, Message, Options, ToolCall, ToolSpec
from app.engine.answer import aggregate
from app.engine.caller import Caller
from app.engine.gateway import Gateway
from app.engine.kept_rounds import GONE_NOTE, mark, marked
from tests.support import example_targets, make_config
from tests.support.engine import ScriptedProvider, calls, said

ALICE, BOB = Identity("alice"), Identity("bob")
CONVERT = {"amount": 250, "from_currency": "USD", "to_currency": "EUR"}
SHELL = ClientTool(ToolSpec("shell", "Run a command", {"type": "object", "properties": {"cmd": {"type": "string"}}}))


async def _engine(deferral: str) -> tuple[Gateway, ScriptedProvider]:
    config = make_config(
        providers={"up": {"base_url": "http://up.test/v1", "max_retries": 0, "deferral": deferral}},
        mcpServers={"finance": {"command": "unused", "defer_loading": True}},
        tool_sets={},
    )
    provider = ScriptedProvider("up")
    gateway = Gateway(config, mcp_targets=example_targets("finance"), providers={"up": provider})
    await gateway.start()
    return gateway, provider


@pytest.fixture(params=["tools", "call_tool", "native"])
async def engine(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Gateway, ScriptedProvider, str]]:
    gateway, provider = await _engine(request.param)
    yield gateway, provider, request.param
    await gateway.stop()


def _ask(messages: list[Message]) -> ChatRequest:
    return ChatRequest("fast", messages, [SHELL], Options())


def _convert(deferral: str) -> tuple[str, dict[str, Any]]:
    if deferral == "call_tool":
        return "call_tool", {"name": "finance__convert_currency", "arguments": CONVERT}
    return "finance__convert_currency", CONVERT


async def _first_turn(gateway: Gateway, provider: ScriptedProvider, deferral: str, caller: Caller) -> list[Message]:
    """Search, convert, then the client's shell call: the client's history after it ran the command."""
    provider.script += [
        calls(("search_tools", {"query": "convert currency"})),
        calls(_convert(deferral)),
        calls(("shell", {"cmd": "echo hi"})),
    ]
    user = Message("user", "Convert 250 USD to EUR and run `echo hi`.")
    answer = await aggregate(gateway.run(_ask([user]), caller))
    assert answer.stop.kind == "tool_calls" and [call.name for call in answer.tool_calls] == ["shell"]
    call = answer.tool_calls[0]
    assert call.id == mark("call_0") and marked(call.id), "the returned id says rounds were kept before it"
    return [user, Message("assistant", None, [call]), Message("tool", "hi", tool_call_id=call.id)]


async def test_the_next_request_gets_the_rounds_back_before_the_call(
    engine: tuple[Gateway, ScriptedProvider, str],
) -> None:
    gateway, provider, deferral = engine
    history = await _first_turn(gateway, provider, deferral, Caller(ALICE))
    provider.script.append(said("219.25 EUR, and it printed hi."))
    answer = await aggregate(gateway.run(_ask(history), Caller(ALICE)))
    assert answer.content == "219.25 EUR, and it printed hi."
    sent = provider.rounds[-1]
    roles = [message.role for message in sent.messages]
    names = [call.name for message in sent.messages for call in message.tool_calls]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"], roles
    assert names == ["search_tools", _convert(deferral)[0], "shell"]
    assert '"converted"' in sent.messages[4].text() and sent.messages[6].text() == "hi"
    if deferral == "tools":
        assert "finance__convert_currency" in provider.tool_names(-1), "what it found stays loaded"
    else:
        assert provider.rounds[-1].tools == provider.rounds[0].tools, "the tools array does not change"
    if deferral == "native":
        assert "finance__convert_currency" in sent.messages[2].loads, "loaded where the search found it"
    assert answer.discovery.tools_called == (), "nothing ran again"


async def test_another_caller_with_the_same_ids_gets_a_note_instead(
    engine: tuple[Gateway, ScriptedProvider, str],
) -> None:
    gateway, provider, deferral = engine
    history = await _first_turn(gateway, provider, deferral, Caller(ALICE))
    provider.script.append(said("ok"))
    await aggregate(gateway.run(_ask(history), Caller(BOB)))
    sent = provider.rounds[-1].messages
    assert [message.role for message in sent] == ["user", "system", "assistant", "tool"]
    assert sent[1].content == GONE_NOTE and "do not call a tool again to repeat an action" in GONE_NOTE


async def test_rounds_that_are_gone_leave_a_note_where_they_were() -> None:
    """Another gateway (no shared Redis), or the rounds expired: the marked call says there were some."""
    first, provider = await _engine("tools")
    try:
        history = await _first_turn(first, provider, "tools", Caller(ALICE))
    finally:
        await first.stop()
    other, provider = await _engine("tools")
    try:
        provider.script.append(said("ok"))
        await aggregate(other.run(_ask([*history, Message("user", "thanks")]), Caller(ALICE)))
    finally:
        await other.stop()
    sent = provider.rounds[-1].messages
    assert [message.role for message in sent] == ["user", "system", "assistant", "tool", "user"]
    assert sent[1].content == GONE_NOTE


async def test_a_call_without_rounds_before_it_is_returned_as_the_upstream_named_it() -> None:
    gateway, provider = await _engine("tools")
    try:
        provider.script.append(calls(("shell", {"cmd": "ls"})))
        answer = await aggregate(gateway.run(_ask([Message("user", "run `ls`")]), Caller(ALICE)))
    finally:
        await gateway.stop()
    assert answer.tool_calls[0].id == "call_0"


def test_a_mark_is_checked_and_leaves_no_room_ids_alone() -> None:
    assert marked(mark("toolu_01abc")) and not marked("toolu_01abc") and not marked("toolu_01abc_tsr000000")
    assert mark(mark("call_1")) == mark("call_1")
    long = "c" * 60
    assert mark(long) == long, "a Responses call_id takes at most 64 characters"


def test_an_upstreams_own_fields_name_the_marked_ids() -> None:
    from app.engine.kept_rounds import rename_ids

    blocks: dict[str, Any] = {"content": [{"type": "thinking", "thinking": "x"}, {"type": "tool_use", "id": "t1"}]}
    rename_ids(blocks, {"t1": mark("t1")})
    assert blocks["content"][1]["id"] == mark("t1") and blocks["content"][0]["thinking"] == "x"


def test_kept_rounds_round_trip_through_the_store_format() -> None:
    from app.core.model import Native, Part
    from app.engine.kept_rounds import KeptRounds, _decode, _encode

    messages = [
        Message("assistant", "thinking aloud", [ToolCall("c1", "search_tools", '{"query": "x"}')],
                reasoning="r", extra=Native("anthropic", {"content": [{"type": "thinking", "signature": "s"}]})),
        Message("tool", [Part("text", text="found")], tool_call_id="c1", loads=["finance__convert_currency"]),
    ]  # fmt: skip
    kept = _decode(_encode(KeptRounds(messages, ["finance__convert_currency"])))
    assert kept.messages == messages and kept.found == ["finance__convert_currency"]
