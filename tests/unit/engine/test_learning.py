"""The learned pairs in the store: bounded in bytes per identity (the least recently used go), one key's flood of
false pairs never reaching another identity's top 5, pairs cleared per tool and per identity, learning off, and
the signal: a search's tool called successfully in the same request, or in the session's next one."""

from __future__ import annotations

from dataclasses import replace

from app.config import LearningConfig, parse_config
from app.core.model import ClientTool, Message, ToolCall, ToolSpec
from app.discovery.manifest import ManifestGroup
from app.discovery.search import Discovery, scored_tools
from app.engine.answer import aggregate
from app.engine.caller import Caller
from app.engine.learning import Learning, Taught
from app.engine.learning_trail import Trail
from app.store import MemoryStore
from tests.support.engine import answer_text, ask, calls, said, started_engine
from tests.support.gateway import make_config
from tests.unit.discovery.test_fusion import entries_of

TOOLS = {
    "calendar": [
        ("create_event", "Create a calendar event: a meeting, with a title, a start and attendees."),
        ("invite_attendee", "Invite someone to a meeting."),
        ("find_free_slots", "Find free time for a meeting in a calendar."),
    ],
    "textkit": [(f"tool_{n}", f"Text utility number {n} for strings.") for n in range(8)],
}


def _learning(**settings: object) -> Learning:
    return Learning(MemoryStore(100_000, 64 << 20), LearningConfig(**settings))  # type: ignore[arg-type]


def _discovery() -> Discovery:
    entries = entries_of(TOOLS)
    return Discovery.build([ManifestGroup(name, "", [e for e in entries if e.server == name]) for name in TOOLS])


async def _top(learning: Learning, caller: str, query: str, k: int = 5) -> list[str]:
    view = await learning.view(caller)
    return [found.entry.name for found in scored_tools(_discovery(), query, None, k, learned=view)]


async def test_a_flood_of_false_pairs_from_one_key_never_reaches_another_identitys_top_5() -> None:
    learning = _learning()
    query = "meeting invite"  # without vectors, a kept query counts for the same words
    for start in range(0, 1000, 100):
        await learning.learn([Taught("mallory", query, "textkit__tool_3", None) for _ in range(start, start + 100)])
    assert "textkit__tool_3" not in await _top(learning, "bob", query)
    assert "textkit__tool_3" in await _top(learning, "mallory", query), "a key's own pairs are its own"
    await learning.learn([Taught("carol", query, "textkit__tool_3", None)])  # a second identity: the quorum
    assert "textkit__tool_3" in await _top(learning, "bob", query)


async def test_an_identitys_pairs_are_bounded_in_bytes_and_the_least_recently_used_go() -> None:
    learning = _learning(max_bytes_per_identity=4096)
    for number in range(200):
        await learning.learn([Taught("alice", f"need number {number}", "calendar__create_event", None)])
    kept = [pair.query for pair in await learning.listed(identity="alice")]
    assert 10 < len(kept) < 200
    assert kept[0] == "need number 199" and "need number 0" not in kept
    assert len((await learning.store.get(learning_key("alice"))) or b"") <= 4096


def learning_key(identity: str) -> object:
    from app.engine.learning import NAMESPACE, PAIRS
    from app.store import Key

    return Key(NAMESPACE, identity, PAIRS)


async def test_pairs_are_cleared_per_tool_per_identity_or_all() -> None:
    learning = _learning()
    await learning.learn([Taught("alice", "meeting invite", "calendar__invite_attendee", None)])
    await learning.learn([Taught("bob", "book a slot", "calendar__find_free_slots", None)])
    await learning.learn([Taught("bob", "meeting invite", "calendar__invite_attendee", None)])
    assert await learning.clear(tool="calendar__invite_attendee", identity="bob") == 1
    assert {(pair.identity, pair.tool) for pair in await learning.listed()} == {
        ("alice", "calendar__invite_attendee"),
        ("bob", "calendar__find_free_slots"),
    }
    assert await learning.clear(identity="alice") == 1
    assert await learning.clear() == 1
    assert await learning.listed() == [] and await learning.view("bob") is None


async def test_learning_off_keeps_nothing_and_lifts_nothing() -> None:
    learning = _learning(enabled=False)
    await learning.learn([Taught("alice", "meeting invite", "textkit__tool_1", None)])
    assert await learning.listed() == [] and await learning.view("alice") is None
    config = parse_config({"tool_discovery": {"learning": False}}, environ={})
    assert config.tool_discovery.learning.enabled is False


async def test_a_client_tools_result_in_the_next_request_teaches_what_the_search_found() -> None:
    learning = _learning()
    first = Trail(learning, "alice", "conversation-1")
    first.searched([("convert some money", ("convert_currency",))], lambda _: None)
    await first.finish()  # the model called the client tool: the call went back to the client
    assert await learning.listed() == []
    following = Trail(learning, "alice", "conversation-1")
    call = ToolCall("call_1", "convert_currency", "{}")
    history = [
        Message("user", "hi"),
        Message("assistant", None, [call]),
        Message("tool", "42 EUR", tool_call_id="call_1"),
    ]
    following.client_results(history, lambda name: name == "convert_currency")
    await following.finish()
    assert [(pair.query, pair.tool) for pair in await learning.listed()] == [("convert some money", "convert_currency")]
    failed = Trail(learning, "alice", "conversation-1")
    failed.searched([("convert some money", ("convert_currency",))], lambda _: None)
    await failed.finish()
    after_error = Trail(learning, "alice", "conversation-1")
    errored = [*history[:2], Message("tool", "Error: no such currency", tool_call_id="call_1")]
    after_error.client_results(errored, lambda name: True)
    await after_error.finish()
    assert (await learning.listed())[0].uses == 1, "an error result teaches nothing"


async def test_a_chat_that_searched_and_called_an_mcp_tool_successfully_is_learned() -> None:
    async with started_engine(make_config()) as (gateway, provider):
        provider.script += [
            calls(("search_tools", {"query": "create a note"})),
            calls(("notes__create_note", {"title": "Groceries", "body": "milk"})),
            said("Saved."),
        ]
        assert await answer_text(gateway, ask("remember milk")) == "Saved."
        pairs = await gateway.learning.listed()
        assert [(pair.query, pair.tool, pair.identity) for pair in pairs] == [
            ("create a note", "notes__create_note", "anonymous")
        ]


async def test_a_deferred_client_tool_is_learned_when_the_next_request_carries_its_result() -> None:
    currency = ClientTool(ToolSpec("convert_money", "Convert an amount of money between currencies.", {}), True)
    caller = Caller(session_id="conversation-7")
    async with started_engine(make_config()) as (gateway, provider):
        provider.script += [calls(("search_tools", {"query": "convert money"})), calls(("convert_money", {"x": 5}))]
        first = replace(ask("5 USD in EUR?"), tools=[currency])
        ended = await aggregate(gateway.run(first, caller))  # ends on the client's call
        assert [call.name for call in ended.tool_calls] == ["convert_money"]
        assert await gateway.learning.listed() == []
        sent = ended.tool_calls[0]
        provider.script += [said("About 4.6 EUR.")]
        history = [
            *first.messages,
            Message("assistant", None, [sent]),
            Message("tool", "4.60 EUR", tool_call_id=sent.id),
        ]
        assert await answer_text(gateway, replace(first, messages=history), caller) == "About 4.6 EUR."
        learned = [(pair.query, pair.tool) for pair in await gateway.learning.listed()]
        assert learned == [("convert money", "convert_money")]
