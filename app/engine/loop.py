"""The round loop: call the upstream, run what it asks for server-side, repeat until there is an answer.

Each round sends the conversation with the currently loaded tools. `search_tools` is answered here and loads
tools for the next round; MCP tools run through their servers (one round's calls concurrently); a call to a
client tool ends the loop and goes back to the client. The loop is written once: it yields typed events
(`app.engine.events`) that a plain answer aggregates and a stream renders as they come.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace

from app.common.errors import GatewayError
from app.common.identity import ANONYMOUS, Identity
from app.common.offload import off_loop
from app.core.catalog import ToolEntry
from app.core.model import (
    ChatRequest,
    Delta,
    HostedTool,
    JsonObject,
    Message,
    ResponseMeta,
    StopReason,
    ToolCall,
    UpstreamRequest,
    Usage,
)
from app.discovery.search import shown_name
from app.engine import spans
from app.engine.cache_account import CacheAccount
from app.engine.events import (
    CallRefused,
    ClientToolCall,
    ContentDelta,
    DiscoveryStats,
    Event,
    Failed,
    Finished,
    HostedCall,
    KeepAlive,
    McpCallFinished,
    McpCallStarted,
    ReasoningBlock,
    ReasoningDelta,
    RefusalDelta,
    RoundFinished,
    RoundStarted,
    SearchDone,
)
from app.engine.kept_rounds import KeptRounds, mark, rename_ids
from app.engine.request_tools import RequestTools, ToolKind
from app.engine.spans import NO_TRACE, RequestTrace
from app.engine.turn import Turn
from app.mcp.client.connections import McpManager
from app.mcp.client.results import truncate
from app.providers import Route

ROUND_SEPARATOR = "\n\n"  # between the text of two rounds, so they don't run together
SUMMARY_CHARS = 120
CallPolicy = Callable[[ToolEntry], str | None]  # why a call may not run, or None when it may


@dataclass
class ChatLoop:
    route: Route
    tools: RequestTools
    mcp: McpManager
    max_rounds: int
    max_calls_per_round: int = 32
    max_searches: int = 16
    rounds: int = 0
    searches_run: int = 0
    tools_called: list[str] = field(default_factory=list)
    round_limit_reached: bool = False
    policy: CallPolicy | None = None
    hosted: list[HostedTool] = field(default_factory=list)  # the request's hosted tools the provider serves
    hosted_dropped: tuple[str, ...] = ()  # and those it does not, left out
    trace: RequestTrace = NO_TRACE  # the request's span: its rounds, searches and MCP calls are spans below it
    identity: Identity = ANONYMOUS  # whose credentials a server that acts as each caller uses
    cache: CacheAccount = field(default_factory=CacheAccount)  # what discovery did to the bill
    kept: KeptRounds | None = None  # rounds it ran before ending on client calls, for the gateway to keep
    _wrote_content: bool = False  # some round's text went to the client
    _in_round_text: bool = False  # this round's text has begun

    async def events(self, request: ChatRequest) -> AsyncGenerator[Event, None]:
        """The request's events, ending with `Finished` or `Failed` (a GatewayError at any point)."""
        messages = self.tools.upstream_history(request.messages)
        start = len(messages)  # what follows is this request's own rounds
        options = self.route.options(request.options)
        deferred = self.tools.deferred_specs()  # the same in every round: the upstream defers them itself
        usage: Usage | None = None
        try:
            while True:
                turn = Turn()
                upstream = UpstreamRequest(
                    self.route.model, messages, self.tools.definitions(), options, request.stream, self.hosted,
                    deferred, request.compact,
                )  # fmt: skip
                async for event in self._round(upstream, turn):
                    yield event
                if turn.usage is not None:
                    usage = usage or Usage()
                    usage.add(turn.usage)
                calls = turn.tool_calls()
                runs, problems = _unzip([self.tools.unwrap(call) for call in calls])  # `call_tool` calls unwrapped
                kinds = [
                    ToolKind.UNKNOWN if problem else self.tools.kind(run.name)
                    for run, problem in zip(runs, problems, strict=True)
                ]
                meta = turn.meta or ResponseMeta(model=self.route.model)
                if not calls:
                    reason, stats = turn.stop or StopReason(), self.discovery_stats()
                    yield Finished(reason, usage, stats, meta, turn.extra)
                    return
                if ToolKind.CLIENT in kinds:
                    async for event in self._client_calls(runs, kinds, messages[start:], turn):
                        yield event
                    yield Finished(StopReason("tool_calls"), usage, self.discovery_stats(), meta, turn.extra)
                    return
                if self.rounds >= self.max_rounds:
                    self.round_limit_reached = True
                    yield self._limit_marker()
                    yield Finished(StopReason("max_tokens"), usage, self.discovery_stats(), meta)
                    return
                messages.append(turn.message(calls))
                async for event in self._run_calls(runs, kinds, messages, problems):
                    yield event
        except GatewayError as exc:
            yield Failed(exc, self.discovery_stats())

    async def _round(self, upstream: UpstreamRequest, turn: Turn) -> AsyncIterator[Event]:
        """One upstream call: its text and reasoning passed on as they come, the turn assembled on the way."""
        self.rounds += 1
        self._in_round_text = False
        number, started = self.rounds, time.perf_counter()
        unsent = self.tools.unsent_tokens()
        span = self.trace.round(number, upstream.model, upstream.stream)
        try:
            async with aclosing(self._deltas(upstream)) as deltas:
                async for delta in deltas:
                    if delta.keepalive:  # the upstream's sign of life, for a client waiting on a stream
                        if turn.started:
                            yield KeepAlive()
                        continue
                    if not turn.started:
                        yield RoundStarted(number, delta.meta or ResponseMeta(model=self.route.model))
                    turn.add(delta)
                    if delta.reasoning:
                        yield ReasoningDelta(delta.reasoning, delta.reasoning_field, delta.reasoning_summary)
                    for block in delta.reasoning_blocks:
                        yield ReasoningBlock(block)
                    for call in delta.hosted_calls:
                        yield HostedCall(call)
                    if delta.content:
                        yield self._content(delta.content, delta.logprobs)
                    if delta.refusal:
                        yield RefusalDelta(delta.refusal, None if delta.content else delta.logprobs)  # said once
            if not turn.started:  # an upstream that closed the stream without a single chunk
                raise GatewayError(502, "The upstream closed the stream without any data.", "upstream_error")
        except GatewayError as exc:
            spans.failed(span, exc)
            self.cache.round(upstream.tools, turn.usage, unsent, answered=False)
            yield RoundFinished(number, time.perf_counter() - started, turn.usage, unsent, ok=False)
            raise
        finally:
            spans.round_finished(span, turn.meta, turn.usage, turn.stop)
        self.cache.round(upstream.tools, turn.usage, unsent, answered=True)
        yield RoundFinished(number, time.perf_counter() - started, turn.usage, unsent, extra=turn.extra)

    async def _deltas(self, upstream: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        if upstream.stream:
            async with aclosing(self.route.provider.stream(upstream)) as deltas:
                async for delta in deltas:
                    yield delta
        else:
            yield await self.route.provider.complete(upstream)

    def _content(self, text: str, logprobs: JsonObject | None = None) -> ContentDelta:
        """Text for the client; the first text of a round after earlier rounds' text starts on a new paragraph."""
        if self._wrote_content and not self._in_round_text:
            text = ROUND_SEPARATOR + text
        self._wrote_content = self._in_round_text = True
        return ContentDelta(text, logprobs)

    def _limit_marker(self) -> ContentDelta:
        separator = ROUND_SEPARATOR if self._wrote_content else ""
        self._wrote_content = self._in_round_text = True
        return ContentDelta(separator + self.round_limit_text())

    async def _client_calls(
        self, calls: list[ToolCall], kinds: list[ToolKind], own: list[Message], turn: Turn
    ) -> AsyncIterator[Event]:
        """The client's calls go back to it. Searches beside them still run, so what they found stays found; MCP
        calls beside them are left for the model to repeat, since their results could not reach the client's
        history. When the request ran rounds of its own (`own`, and those searches), they are kept for the next
        request (`kept`), and the returned ids are marked so that it finds them (app.engine.kept_rounds)."""
        searches: list[ToolCall] = []
        results: list[Message] = []
        for index, (call, kind) in enumerate(zip(calls, kinds, strict=True)):
            if kind is ToolKind.SEARCH and self._over_cap(call, kind, index, len(calls)) is None:
                text, event = await self._search(call)
                searches.append(call)
                loads = list(event.found) if self.tools.native else []
                limit = self.mcp.config.tool_result_max_chars
                results.append(Message("tool", truncate(text, limit), tool_call_id=call.id, loads=loads))
                yield event
        if searches:
            own = [*own, Message("assistant", None, searches), *results]
        client = [call for call, kind in zip(calls, kinds, strict=True) if kind is ToolKind.CLIENT]
        if own:
            renamed = {call.id: mark(call.id) for call in client}
            client = [replace(call, id=renamed[call.id]) for call in client]
            if turn.extra is not None:  # its blocks or items name the calls too, and a client may send them back
                rename_ids(turn.extra.value, renamed)
            self.kept = KeptRounds(own, list(self.tools.found_by_search), client[0].id)
        for index, call in enumerate(client):
            yield ClientToolCall(index, call)

    async def _run_calls(
        self, calls: list[ToolCall], kinds: list[ToolKind], messages: list[Message], problems: list[str | None]
    ) -> AsyncIterator[Event]:
        """Answer every call of the round (MCP calls concurrently) and extend the conversation for the next one.
        `problems`: per call, what the model reads instead of a result (a `call_tool` call it wrote wrong)."""
        results: list[str] = [""] * len(calls)
        loads: list[list[str]] = [[] for _ in calls]  # per result, the tools it loads (the `native` deferral)
        pending: dict[asyncio.Task[tuple[str, bool, float]], tuple[int, str, str]] = {}
        try:
            for index, (call, kind) in enumerate(zip(calls, kinds, strict=True)):
                capped = self._over_cap(call, kind, index, len(calls))
                if capped is not None:
                    results[index] = capped
                elif problems[index] is not None:
                    results[index] = problems[index] or ""
                elif kind is ToolKind.SEARCH:
                    results[index], event = await self._search(call)
                    loads[index] = list(event.found) if self.tools.native else []
                    yield event
                elif kind is ToolKind.MCP:
                    arguments, problem = parse_arguments(call)
                    if problem:
                        results[index] = problem
                        continue
                    entry = self.tools.entries[call.name]
                    assert entry.server is not None
                    reason = self.policy(entry) if self.policy is not None else None
                    if reason is not None:
                        results[index] = f"Error: {call.name} was not run: {reason}"
                        yield CallRefused(call.name, reason)
                        continue
                    self.tools_called.append(call.name)
                    task = asyncio.ensure_future(self._call_mcp(entry.server, entry.original_name, arguments, call.id))
                    pending[task] = (index, call.name, entry.server)
                    yield McpCallStarted(call.name, entry.server)
                else:
                    results[index] = self.tools.refusal(call.name, kind)
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    index, name, server = pending.pop(task)
                    text, failed, seconds = task.result()
                    results[index] = text
                    if self.tools.trail is not None and self.tools.searchable(name):
                        self.tools.trail.called(name, not failed)
                    yield McpCallFinished(name, server, not failed, seconds, _summary(text))
        finally:
            for task in pending:
                task.cancel()
        limit = self.mcp.config.tool_result_max_chars  # every result the model gets, the gateway's own included
        messages.extend(
            Message(role="tool", content=truncate(text, limit), tool_call_id=call.id, loads=loaded)
            for call, text, loaded in zip(calls, results, loads, strict=True)
        )

    def _over_cap(self, call: ToolCall, kind: ToolKind, index: int, count: int) -> str | None:
        """Why the round's `index`th call (of `count`) is not run, or None: one model reply asks for a bounded
        amount of work, and the model reads the rest. A search runs while the request has searches left."""
        if index >= self.max_calls_per_round:
            return (
                f"Error: {shown_name(call.name)} was not run: the reply asked for {count} tool calls and this gateway "
                f"runs at most {self.max_calls_per_round} a round (max_tool_calls_per_round). Call the ones still "
                "needed in the next reply."
            )
        if kind is ToolKind.SEARCH and self.searches_run >= self.max_searches:
            return (
                f"Error: search_tools was not run: this request already ran {self.max_searches} searches, "
                "the most this gateway allows (max_searches_per_request). Use the tools already found."
            )
        return None

    async def _call_mcp(self, server: str, tool: str, arguments: JsonObject, call_id: str) -> tuple[str, bool, float]:
        started = time.perf_counter()
        with self.trace.span.current():  # its own task: the MCP client's span goes below the request's
            text, failed = await self.mcp.call_tool(server, tool, arguments, self.identity, call_id=call_id)
        return text, failed, time.perf_counter() - started

    async def _search(self, call: ToolCall) -> tuple[str, SearchDone]:
        """Run a search: each of its queries counts against the request's searches, and those past what is left
        are named in its result, not run. Their vectors are computed first, in one batch, and the search itself runs in
        the worker pool too: ranking 10,000 tools, or stemming a long query's made-up words, is work input sizes."""
        span = self.trace.search(call)
        arguments, problem = parse_arguments(call)
        if problem:
            self.tools.search_calls += 1
            self.searches_run += 1
            spans.searched(span, None)
            span.end()
            return problem, SearchDone(None, (), False)
        left = self.max_searches - self.searches_run
        try:
            keyword_only = await self.tools.prepare_search(arguments, left)
            outcome = await off_loop(self.tools.search, arguments, left, self.max_searches)
        except BaseException as exc:
            spans.failed(span, exc)
            span.end()
            raise
        if keyword_only:
            outcome = replace(outcome, text=f"{outcome.text}\n\n{keyword_only}")
        spans.searched(span, outcome)
        span.end()
        self.searches_run += outcome.searches
        loaded = tuple(entry.name for entry in [*outcome.found, *outcome.related])
        query = outcome.queries[0] if len(outcome.queries) == 1 else None
        return outcome.text, SearchDone(query, loaded, outcome.weak, outcome.queries)

    def round_limit_text(self) -> str:
        return (
            f"[toolsift: stopped after {self.max_rounds} rounds, the round limit, while the model was still "
            "calling tools. Ask again to continue, or raise max_rounds in the gateway config.]"
        )

    def discovery_stats(self) -> DiscoveryStats:
        return DiscoveryStats(
            rounds=self.rounds,
            search_calls=self.tools.search_calls,
            tools_discovered=tuple(self.tools.found_by_search),
            tools_prefetched=tuple(self.tools.prefetched),
            tools_called=tuple(self.tools_called),
            deferred_tools=len(self.tools.deferred_names),
            loaded_tools=tuple(self.tools.loaded_names),
            round_limit_reached=self.round_limit_reached,
            hosted_tools_dropped=self.hosted_dropped,
            cache=self.cache.figures(),
            deferral=self.tools.deferral,
        )


def _unzip(pairs: list[tuple[ToolCall, str | None]]) -> tuple[list[ToolCall], list[str | None]]:
    return [call for call, _ in pairs], [problem for _, problem in pairs]


def _summary(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 3] + "..."


def _json_error(text: str) -> str:
    """Where text that is not JSON goes wrong, for the model to fix it (integers or nesting beyond what Python
    parses have no position)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at position {exc.pos}"
    except (ValueError, RecursionError):
        pass
    return "too deep or too long"


def parse_arguments(call: ToolCall) -> tuple[JsonObject, str | None]:
    """The call's arguments as an object, or the error text the model gets instead."""
    arguments = call.parsed
    if arguments is None:
        return {}, (
            f"Error: the arguments for '{call.name}' are not valid JSON ({_json_error(call.arguments)}). "
            "Call it again with a JSON object."
        )
    if not isinstance(arguments, dict):
        return {}, f"Error: the arguments for '{call.name}' must be a JSON object, not {type(arguments).__name__}."
    return arguments, None
