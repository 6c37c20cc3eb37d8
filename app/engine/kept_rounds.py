"""Server-side rounds kept across a client-tool round trip, so no tool the gateway ran runs twice.

A loop that ends on a client's tool call has usually done work of its own first: searches, MCP calls and their
results. The client's history never holds them (it sees its own call and, next, its own result), so the next
request would show the model a conversation in which that work never happened: the found tools unloaded, and a
`create_event` run again. So when a request that ran rounds of its own ends on client calls, the gateway keeps
those rounds in the keyed store (`app.store`, the sessions' one: memory, or Redis for every replica), under the
caller and the first returned call's id, expiring with sessions. The returned ids carry a mark (a suffix and a
checksum), so a later request knows which assistant turns had rounds before them and splices them back in, in
the upstream's view only. Where they are gone (expired, evicted, another gateway without Redis), the upstream
request says so in a system note instead of showing nothing.

The rounds are kept as the loop wrote them, in the route's deferral format (`call_tool` calls, results that load
tools natively, `tool_search` calls), so a conversation keeps a fixed tools array.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from app.common.identity import Identity
from app.common.offload import in_thread_if_large
from app.core.model import JsonObject, Message, Native, Part, ToolCall
from app.store import Key, Store, StoreUnavailable, dump_json, load_json, unavailable_level

log = logging.getLogger("toolsift.rounds")
NAMESPACE = "rounds"  # in Redis: toolsift:rounds:<identity>:<call id>
MARK = "_tsr"  # a returned call id's mark: MARK and CHECK hex digits of its digest
CHECK = 6
MAX_ID = 64  # the longest call id the APIs take (Responses `call_id`); an id with no room is not marked
GONE_NOTE = (
    "Note from the gateway: before the next assistant turn, this gateway ran tools itself in this conversation "
    "(tool searches and tool calls whose results the client does not keep), and that record has expired, so it "
    "is not shown. What those calls did has already happened: do not call a tool again to repeat an action; "
    "call one again only to read something you need now."
)


@dataclass(frozen=True, slots=True)
class KeptRounds:
    """A request's own rounds (its assistant turns and tool results, in order) and the tools its searches found,
    kept under `call_id`: the first call returned after them (marked)."""

    messages: list[Message]
    found: list[str]
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class Spliced:
    """A client's history as the upstream is sent it: kept rounds back in place, notes where they were gone
    (`messages` is the client's own list when it had no marked call)."""

    messages: list[Message]
    found: list[str]


def mark(call_id: str) -> str:
    """The id a client gets for a call that follows rounds the gateway ran (unchanged when there is no room)."""
    if marked(call_id) or len(call_id) + len(MARK) + CHECK > MAX_ID:
        return call_id
    return f"{call_id}{MARK}{_check(call_id)}"


def marked(call_id: str) -> bool:
    stem, found, check = call_id.rpartition(MARK)
    return bool(found) and bool(stem) and check == _check(stem)


def _check(stem: str) -> str:
    return hashlib.sha256(stem.encode()).hexdigest()[:CHECK]


def rename_ids(value: Any, renamed: dict[str, str]) -> None:
    """Rename call ids in an upstream's own fields of a turn (its content blocks or items), in place, so a client
    that sends them back sends the ids it got."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, str) and item in renamed:
            value[key] = renamed[item]
        else:
            rename_ids(item, renamed)


class RoundKeeper:
    """Kept rounds in the store, `ttl` seconds each. A store that fails never fails a request: the rounds are
    then missing, and the next request says so."""

    def __init__(self, store: Store, ttl_seconds: float) -> None:
        self.store = store
        self.ttl = ttl_seconds

    async def keep(self, owner: Identity, kept: KeptRounds) -> bool:
        """Encoded in a thread: rounds hold MCP results and an upstream's own blocks, of any size, and sizing them
        first would be the same walk."""
        raw = await asyncio.to_thread(_encode, kept)
        try:
            stored = await self.store.put(_key(owner, kept.call_id), raw, self.ttl)
        except StoreUnavailable as exc:
            log.log(unavailable_level(exc), "rounds %s", exc)
            return False
        if not stored:
            log.warning("rounds not kept: %d bytes, over what the store keeps for its caller", len(raw))
        return stored

    async def splice(self, owner: Identity, messages: list[Message]) -> Spliced:
        """`messages` with every kept round back before the assistant turn whose marked call followed it. Rounds
        are kept under a turn's first marked call, so that is the one looked up: one read a turn at most."""
        turns = {
            index: first
            for index, message in enumerate(messages)
            if message.role == "assistant"
            and (first := next((call.id for call in message.tool_calls if marked(call.id)), None))
        }
        if not turns:
            return Spliced(messages, [])
        found = await asyncio.gather(*(self._read(owner, call_id) for call_id in turns.values()))
        at = dict(zip(turns, found, strict=True))
        result: list[Message] = []
        tools: list[str] = []
        for index, message in enumerate(messages):
            if index in at:
                kept = at[index]
                if kept is None:
                    result.append(Message("system", GONE_NOTE))
                else:
                    result.extend(kept.messages)
                    tools.extend(name for name in kept.found if name not in tools)
            result.append(message)
        return Spliced(result, tools)

    async def _read(self, owner: Identity, call_id: str) -> KeptRounds | None:
        try:
            raw = await self.store.get(_key(owner, call_id))
        except StoreUnavailable as exc:
            log.log(unavailable_level(exc), "rounds %s", exc)
            return None
        if raw is None:
            return None
        try:
            kept: KeptRounds = await in_thread_if_large(len(raw), _decode, raw)
        except (ValueError, KeyError, TypeError):  # written by another version: as good as gone
            return None
        return kept


def _key(owner: Identity, call_id: str) -> Key:
    return Key(NAMESPACE, owner.id, call_id)


def _encode(kept: KeptRounds) -> bytes:
    return dump_json({"messages": [_message(message) for message in kept.messages], "found": kept.found})


def _decode(raw: bytes) -> KeptRounds:
    value = load_json(raw)
    return KeptRounds([_read_message(item) for item in value["messages"]], [str(name) for name in value["found"]])


def _message(message: Message) -> JsonObject:
    content: Any = message.content
    if isinstance(content, list):
        content = [{"kind": part.kind, "text": part.text, "url": part.url, "native": part.native} for part in content]
    return {
        "role": message.role,
        "content": content,
        "tool_calls": [[call.id, call.name, call.arguments] for call in message.tool_calls],
        "tool_call_id": message.tool_call_id,
        "reasoning": message.reasoning,
        "reasoning_field": message.reasoning_field,
        "extra": [message.extra.format, message.extra.value] if message.extra is not None else None,
        "loads": message.loads,
    }


def _read_message(value: JsonObject) -> Message:
    content = value["content"]
    if isinstance(content, list):
        content = [Part(part["kind"], part["text"], part["url"], part["native"]) for part in content]
    extra = value["extra"]
    return Message(
        role=value["role"],
        content=content,
        tool_calls=[ToolCall(str(id_), str(name), str(arguments)) for id_, name, arguments in value["tool_calls"]],
        tool_call_id=value["tool_call_id"],
        reasoning=value["reasoning"],
        reasoning_field=value["reasoning_field"],
        extra=Native(extra[0], extra[1]) if extra is not None else None,
        loads=[str(name) for name in value["loads"]],
    )
