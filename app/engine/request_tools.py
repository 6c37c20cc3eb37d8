"""One request's tools: which are loaded, in what order, and what `search_tools` can still find.

The order of tool definitions sent upstream never changes within a request or across the turns of one
conversation: tools loaded from the start, then `search_tools`, then discovered tools in the order they were
found. With the `call_tool` deferral (app.engine.call_tool) found tools are never added: the list is the tools
loaded from the start, `search_tools` and `call_tool`, the same in every request. With the `native` deferral
(app.engine.native_deferral) the upstream gets every deferred tool up front for it to defer (or, on a Responses
upstream, none of them), and search results name the tools they load.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from enum import Enum
from typing import Any

from app.codecs.responses.tools import TOOL_SEARCH
from app.core.catalog import (
    SEARCH_TOOL_NAME,
    ToolEntry,
)
from app.core.model import Message, Native, ToolCall, ToolSpec
from app.discovery.describe import LOADED_NOTE
from app.discovery.encode_budget import DEFAULT_QUERY_TOKENS, EncodeBudget
from app.discovery.learned import LearnedView
from app.discovery.manifest import search_tool_definition
from app.discovery.queries import DEFAULT_MAX_QUERIES, QueryBudget
from app.discovery.related import with_related
from app.discovery.search import (
    Discovery,
    SearchOutcome,
    clean_query,
    prepare_query,
    prepare_search,
    ranked_text,
    run_search,
    scored_tools,
    shown_name,
)
from app.engine.call_tool import (
    CALL_TOOL_CALLABLE_AFTER,
    CALL_TOOL_NAME,
    CALL_TOOL_SPEC,
    FOUND_NOTE,
    definitions_text,
    unwrap,
    wrapped_history,
)
from app.engine.learning_trail import Trail
from app.engine.native_deferral import with_loads

CLIENT_GROUP = "client"
CLIENT_SUMMARY = "Tools of the calling application"
PROXY_NOTE = "These tools are callable through call_tool."


class ToolKind(Enum):
    SEARCH = "search"
    MCP = "mcp"
    CLIENT = "client"
    NOT_LOADED = "not_loaded"
    UNKNOWN = "unknown"


class RequestTools:
    def __init__(
        self,
        entries: list[ToolEntry],
        discovery: Discovery | None,
        max_results: int,
        load_related: int = 0,
        max_queries: int = DEFAULT_MAX_QUERIES,
        query_tokens: int = DEFAULT_QUERY_TOKENS,
        deferral: str = "tools",
        search_output: bool = False,
        proxy: bool = False,
    ) -> None:
        """`deferral`: how found tools reach the upstream, `tools` (added to the list), `call_tool` or `native`;
        `search_output`: a `native` upstream that loads tools from tool search outputs (the Responses API);
        `proxy`: searches for a client that runs what it finds through `call_tool` (the MCP front's proxy mode),
        which may find any tool, loads nothing and reads the found tools' schemas in the result."""
        self.proxy = proxy
        self.entries = {entry.name: entry for entry in entries}
        self.discovery = discovery
        self.max_results = max_results
        self.load_related = load_related  # related tools a search loads per found tool
        self.max_queries = max_queries  # queries one search_tools call runs
        self.encoding = EncodeBudget(query_tokens)  # query tokens the request's searches may have encoded
        self._initial = [entry.name for entry in entries if discovery is None or not entry.deferred]
        self._loaded = set(self._initial)
        self.discovered: list[str] = []  # loaded after the start, in order: from history, session or search
        self.found_by_search: list[str] = []
        self.prefetched: list[str] = []
        self.turn = 0  # the request's user messages: a tool first called now was first called at this turn
        self.turns: dict[str, int] = {}  # the turn that first called each tool a session remembers (0: not yet)
        self.client_loaded: list[str] = []  # loaded by the client's own tool search (a stored response, a reference)
        self.search_calls = 0
        self.trail: Trail | None = None  # the request's learning signal (app/engine/learning_trail.py)
        self.learned: LearnedView | None = None  # what the deployment learned, read at the first search
        self.deferral = deferral if discovery is not None and deferral in ("call_tool", "native") else "tools"
        self.call_tool = self.deferral == "call_tool"
        self.native = self.deferral == "native"
        self.search_output = self.native and search_output
        definition = discovery.definition if discovery is not None else None  # the discovery's, in chat form
        if discovery is not None and self.call_tool:
            definition = search_tool_definition(discovery.groups, discovery.manifest, CALL_TOOL_CALLABLE_AFTER)
        search = definition["function"] if definition is not None else {}
        self._search_spec = ToolSpec(SEARCH_TOOL_NAME, search.get("description", ""), search.get("parameters", {}),
                                     native=Native("openai", definition) if definition else None)  # fmt: skip
        if self.search_output:  # a client-executed `tool_search` tool, with the gateway's description and parameters
            self._search_spec = replace(self._search_spec, native=None, kind="tool_search", wire={})

    @property
    def deferred_names(self) -> list[str]:
        return [name for name, entry in self.entries.items() if self.discovery is not None and entry.deferred]

    @property
    def loaded_names(self) -> list[str]:
        return [*self._initial, *self.discovered]

    def unsent_tokens(self) -> int:
        """Estimated tokens of the deferred definitions an upstream call does not carry."""
        if self.discovery is None:
            return 0
        # Found definitions reach the model in every mode: in `tools`, in search results, or loaded where named.
        return self.discovery.tokens - sum(self.entries[name].tokens for name in self.discovered)

    def is_loaded(self, name: str) -> bool:
        return name in self._loaded

    def definitions(self) -> list[ToolSpec]:
        definitions = [self.entries[name].spec for name in self._initial]
        if self.discovery is not None:
            definitions.append(self._search_spec)
        if self.call_tool:
            definitions.append(CALL_TOOL_SPEC)
            return definitions
        if self.native:
            return definitions
        definitions.extend(self.entries[name].spec for name in self.discovered)
        return definitions

    def deferred_specs(self) -> list[ToolSpec]:
        """With the `native` deferral, every tool the upstream defers itself, in the catalog's (stable) order."""
        if not self.native:
            return []
        initial = set(self._initial)
        return [self.entries[name].spec for name in self.deferred_names if name not in initial]

    def unwrap(self, call: ToolCall) -> tuple[ToolCall, str | None]:
        """The call to run for a call the model made: with the `call_tool` deferral, a `call_tool` call becomes
        the call of the tool it names (or stays, with the error the model reads); a Responses upstream's
        `tool_search` call is a `search_tools` call; any other call is itself."""
        if self.call_tool and call.name == CALL_TOOL_NAME:
            return unwrap(call)
        if self.search_output and call.name == TOOL_SEARCH:
            return replace(call, name=SEARCH_TOOL_NAME), None
        return call, None

    def upstream_history(self, messages: list[Message]) -> list[Message]:
        """The conversation as the upstream is sent it: with the `call_tool` deferral, the client's plain calls
        of deferred tools as the `call_tool` calls the model made; with the `native` one, the load exchanges that
        load again what earlier turns found (app.engine.native_deferral)."""
        if self.native:  # loaded again: what the conversation called, what this request prefetched, the client's
            anchors = {name: turn for name, turn in self.turns.items() if turn > 0}
            anchors |= {name: self.turn for name in self.prefetched}
            anchors |= {name: 0 for name in self.client_loaded}
            deferred = {spec.name for spec in self.deferred_specs()}
            return with_loads(messages, deferred, [name for name in self.discovered if name in anchors], anchors)
        if not self.call_tool:
            return list(messages)
        return wrapped_history(messages, self._wrapped)

    def found_turns(self, called: Iterable[str] = ()) -> dict[str, int]:
        """For the session: the turn that first called each tool loaded after the start, among them those `called`
        in this request (0: found, not called yet). A native upstream gets a tool that was called loaded again
        where it was first called, the same place in every later request; one only found is a search away."""
        now = set(called)
        return {name: self.turns.get(name) or (self.turn if name in now else 0) for name in self.discovered}

    def _wrapped(self, name: str) -> bool:
        entry = self.entries.get(name)
        return entry is not None and entry.deferred and name not in self._initial

    def kind(self, name: str) -> ToolKind:
        if name == SEARCH_TOOL_NAME and self.discovery is not None:
            return ToolKind.SEARCH
        entry = self.entries.get(name)
        if entry is None:
            return ToolKind.UNKNOWN
        if name not in self._loaded:
            return ToolKind.NOT_LOADED
        return ToolKind.CLIENT if entry.server is None else ToolKind.MCP

    def refusal(self, name: str, kind: ToolKind) -> str:
        """What a caller is told when it calls a tool that is not loaded or does not exist: the same words in a
        chat's loop and on the MCP front."""
        name = shown_name(name)  # a model's name is anything
        if kind is ToolKind.NOT_LOADED:
            return (
                f"Error: Tool '{name}' is not loaded yet, so it was not run. Call search_tools with "
                f'{{"tool_names": ["{name}"]}} first, then call it again.'
            )
        hint = " Use search_tools to find the right tool." if self.discovery else ""
        loaded = ", ".join(self.loaded_names) or "none"
        return f"Error: Unknown tool '{name}'. Loaded tools: {loaded}.{hint}"

    def pin(self, names: Iterable[str]) -> None:
        """Load deferred tools as if loaded from the start: in `tools` from the first round on, whatever the
        deferral."""
        for name in names:
            if name in self.entries and name not in self._loaded:
                self._loaded.add(name)
                self._initial.append(name)

    def load(self, names: Iterable[str]) -> list[str]:
        """Load deferred tools by name (unknown or already loaded names are ignored); return the new ones."""
        new: list[str] = []
        for name in names:
            if name in self.entries and name not in self._loaded and self.discovery is not None:
                self._loaded.add(name)
                self.discovered.append(name)
                new.append(name)
        return new

    def prefetch(self, text: str, count: int, min_match: float) -> list[str]:
        """Before the first upstream call, load up to `count` tools matching `text` (the user's latest message)
        at least `min_match` of the best possible score: when the match is clear it saves a search round."""
        if self.discovery is None or count <= 0 or not text:
            return []
        text = clean_query(text)
        best = self.discovery.index.best_possible(text)
        ranked = scored_tools(self.discovery, text, None, count, self.is_loaded)
        self.prefetched = self.load(found.entry.name for found in ranked if best and found.lexical / best >= min_match)
        return self.prefetched

    async def prepare(self, query: Any) -> None:
        """A text's query vector, computed off the event loop, so the search itself stays synchronous."""
        await prepare_query(self.discovery, query, self.encoding)

    async def prepare_search(self, arguments: Any, left: int | None = None) -> str | None:
        """The vectors of every query of a `search_tools` call, in one batch off the event loop, within the
        request's encoding budget; returns what the result says of queries ranked by keywords alone, or None."""
        if self.trail is not None:
            self.learned = await self.trail.view()
        return await prepare_search(self.discovery, arguments, QueryBudget(self.max_queries, left), self.encoding)

    def search(
        self, arguments: dict[str, Any], left: int | None = None, per_request: int | None = None
    ) -> SearchOutcome:
        """Answer a `search_tools` call; with `left` (of `per_request`) searches the request may still run, the
        call's queries past that are named, not run."""
        assert self.discovery is not None
        self.search_calls += 1
        budget = QueryBudget(self.max_queries, left, per_request)
        if self.proxy:  # nothing counts as loaded, and nothing related is added: the client asked for what it finds
            proxied = run_search(arguments, self.discovery, _nothing, self.max_results, loaded_note=PROXY_NOTE,
                                 budget=budget, learned=self.learned)  # fmt: skip
            self._searched(proxied)
            return proxied
        loaded_servers = sorted({entry.server for name in self._initial if (entry := self.entries[name]).server})
        note = FOUND_NOTE if self.call_tool else LOADED_NOTE
        brief = self.call_tool or self.native  # the definitions follow in the text, or load where it stands
        outcome = run_search(
            arguments, self.discovery, self.is_loaded, self.max_results, loaded_servers, note, budget, brief,
            self.learned,
        )  # fmt: skip
        self._searched(outcome)
        outcome = with_related(outcome, self.discovery, self.load_related, self.is_loaded)
        found = [*outcome.found, *outcome.related]
        self.found_by_search.extend(self.load(entry.name for entry in found))
        if self.call_tool and found:  # the model reads the definitions here, found now or earlier: never in `tools`
            outcome = replace(outcome, text=f"{outcome.text}\n\n{definitions_text(found)}")
        return outcome

    def _searched(self, outcome: SearchOutcome) -> None:
        """Tell the request's learning signal what each query returned (with the query's vector, if it had one)."""
        if self.trail is None or not outcome.by_query:
            return
        semantic = self.discovery.semantic if self.discovery is not None else None
        self.trail.searched(
            outcome.by_query, lambda query: semantic.query_vector(ranked_text(query)) if semantic is not None else None
        )

    def searchable(self, name: str) -> bool:
        """A deferred tool: one a search returns."""
        entry = self.entries.get(name)
        return entry is not None and entry.deferred and self.discovery is not None


def _nothing(name: str) -> bool:
    return False
