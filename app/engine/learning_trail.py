"""The learning signal of one request (or one MCP client's search and call): which query returned which tool, and
which of those tools the model then called successfully.

A use is learned when the call succeeds: an MCP call without an error result, in this request or a later one of
the same caller and session; a client tool when the client's next request carries a result for that call that
is not an error (its text does not start with "Error", which is how every front's error results read). Tools a
search returned but the model has not called yet are kept for an hour (`PENDING_TTL`) per caller and session, so
the next request can still learn them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from app.core.model import Message
from app.discovery.encoder import Array
from app.discovery.learned import LearnedView
from app.engine.learning import Learning, Taught, decode_vector, encode_vector, kept_query
from app.store import Key, StoreUnavailable, dump_json, load_json, unavailable_level

log = logging.getLogger("toolsift.learning")
PENDING = "learning-pending"
PENDING_TTL = 3600.0
MAX_PENDING = 64  # tools a caller's session keeps waiting for a call
VectorOf = Callable[[str], Array | None]


class Trail:
    def __init__(self, learning: Learning, identity: str, session: str | None = None) -> None:
        self.learning = learning
        self.identity = identity
        self.key = Key(PENDING, identity, session or "-")
        self.found: dict[str, tuple[str, Array | None]] = {}  # tool -> the query that returned it, its vector
        self.succeeded: list[str] = []  # tools called successfully, in order
        self._view: LearnedView | None = None
        self._viewed = False

    @property
    def enabled(self) -> bool:
        return self.learning.enabled

    async def view(self) -> LearnedView | None:
        """The learned pairs this caller's searches read, fetched once a request (at its first search)."""
        if not self._viewed:
            self._view, self._viewed = await self.learning.view(self.identity), True
        return self._view

    def searched(self, by_query: Iterable[tuple[str, tuple[str, ...]]], vector_of: VectorOf) -> None:
        """What each query of a search returned (the first query that returned a tool is the one kept)."""
        if not self.enabled:
            return
        for query, tools in by_query:
            for tool in tools:
                if tool not in self.found:
                    self.found[tool] = (query, vector_of(query))

    def called(self, tool: str, ok: bool) -> None:
        if ok and self.enabled and tool not in self.succeeded:
            self.succeeded.append(tool)

    def client_results(self, messages: list[Message], searchable: Callable[[str], bool]) -> None:
        """The client's results for the calls of the last assistant turn: a searchable tool's that is not an
        error succeeded (the pending search is read only when there is one)."""
        if not self.enabled:
            return
        last = next((at for at in range(len(messages) - 1, -1, -1) if messages[at].role == "assistant"), None)
        if last is None:
            return
        names = {call.id: call.name for call in messages[last].tool_calls if searchable(call.name)}
        for message in messages[last + 1 :]:
            name = names.get(message.tool_call_id or "")
            if message.role == "tool" and name is not None:
                self.called(name, not _reads_as_error(message))

    async def finish(self) -> None:
        """Learn what succeeded, and keep what was found but not yet called for the caller's next request."""
        if not self.enabled or (not self.succeeded and not self.found):
            return
        taught = []
        try:
            pending = await self._pending()
            before = len(pending)
            for tool in self.succeeded:
                source = self.found.get(tool) or pending.get(tool)
                pending.pop(tool, None)
                if source is not None:
                    taught.append(Taught(self.identity, source[0], tool, source[1]))
            pending.update({tool: source for tool, source in self.found.items() if tool not in self.succeeded})
            if pending:
                latest = list(pending.items())[-MAX_PENDING:]
                rows = {tool: [kept_query(query), encode_vector(vector)] for tool, (query, vector) in latest}
                await self.learning.store.put(self.key, dump_json(rows), ttl=PENDING_TTL)
            elif before:
                await self.learning.store.delete(self.key)
        except StoreUnavailable as exc:
            log.log(unavailable_level(exc), "learning: the store is unavailable (%s)", exc)
        await self.learning.learn(taught)

    async def _pending(self) -> dict[str, tuple[str, Array | None]]:
        raw = await self.learning.store.get(self.key)
        if not raw:
            return {}
        try:
            return {str(tool): (str(query), decode_vector(vector)) for tool, (query, vector) in load_json(raw).items()}
        except (ValueError, TypeError, AttributeError):
            return {}


def _reads_as_error(message: Message, enough: int = 256) -> bool:
    """Whether a tool result's text starts with "Error", read only as far as that takes (a result can be
    megabytes): its text parts joined as `Message.text` joins them, up to `enough` characters past the blanks."""
    content = message.content
    texts = [content] if isinstance(content, str) else (part.text for part in content or () if part.kind == "text")
    start = ""
    for text in texts:
        start = f"{start} {text[:enough]}" if start else text[:enough]
        if len(start.lstrip()) >= enough:
            break
    return start.lstrip().lower().startswith("error")
