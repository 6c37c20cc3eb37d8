"""What the loop yields while it runs a request: one stream of typed events for every consumer.

A front renders them (a plain answer aggregates them, a stream writes them as they come), the request record
counts them for the log line and metrics, and MCP progress notifications can follow them. The last event is
always `Finished` or `Failed`; the first, once the request is routed, `Routed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.common.errors import GatewayError
from app.core.model import JsonObject, Native, ResponseMeta, StopReason, ToolCall, Usage
from app.engine.cache_account import CacheFigures


@dataclass(frozen=True, slots=True)
class Routed:
    """The request's model was routed and its tools built: always the first event. `model` is the upstream's name
    for it (an alias resolved), which a front may answer with."""

    provider: str
    model: str


@dataclass(frozen=True, slots=True)
class RoundStarted:
    """The upstream's first piece of a round arrived (so its id and model are known)."""

    round: int
    meta: ResponseMeta


@dataclass(frozen=True, slots=True)
class ContentDelta:
    text: str
    logprobs: JsonObject | None = None


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    """The model's refusal, apart from its text (a chat upstream's `refusal`), for a front of a format that has
    one."""

    text: str
    logprobs: JsonObject | None = None


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    field: str | None = None  # the upstream's own name for it, for an edge of its format
    summary: bool = False  # a summary of the thinking (a Responses upstream's), not the thinking itself


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """A reasoning block ended, whole as its upstream wrote it (Anthropic's thinking with its signature, or redacted
    thinking): a front of the same format gives it to the client as it came. Its text came in `ReasoningDelta`s."""

    native: Native


@dataclass(frozen=True, slots=True)
class HostedCall:
    """The upstream ran one of its hosted tools (a web search, ...), whole as it reported it: a front of the same
    format lists it among the answer's items, the others have nothing to show for it."""

    native: Native


@dataclass(frozen=True, slots=True)
class ClientToolCall:
    """A call of the client's own tool: it ends the request and goes back to the client."""

    index: int
    call: ToolCall


@dataclass(frozen=True, slots=True)
class SearchDone:
    query: str | None  # a one-query search's query; None for a search by tool names or server, or of several
    found: tuple[str, ...]
    weak: bool  # every result matched by meaning alone
    queries: tuple[str, ...] = ()  # every query the search ran, one or several

    @property
    def label(self) -> str:
        if len(self.queries) > 1:
            return ", ".join(repr(query) for query in self.queries)
        return repr(self.query) if self.query is not None else "by tool name or server"


@dataclass(frozen=True, slots=True)
class McpCallStarted:
    name: str
    server: str


@dataclass(frozen=True, slots=True)
class McpCallFinished:
    name: str
    server: str
    ok: bool
    seconds: float
    summary: str = ""  # the result's first line, shortened


@dataclass(frozen=True, slots=True)
class CallRefused:
    """A call the request's policy did not allow (run_task and destructive tools); the model was told why."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class RoundFinished:
    """An upstream call ended, answered or not; `unsent_tool_tokens` are the deferred definitions it did not carry,
    `extra` the upstream's own fields of its turn (what a front may hand the client to pass back)."""

    round: int
    seconds: float
    usage: Usage | None
    unsent_tool_tokens: int
    ok: bool = True
    extra: Native | None = None


@dataclass(frozen=True, slots=True)
class KeepAlive:
    """Nothing to say yet; rendered by streams that have waited (the SSE response makes these on a timer)."""


@dataclass(frozen=True, slots=True)
class DiscoveryStats:
    rounds: int
    search_calls: int
    tools_discovered: tuple[str, ...]
    tools_prefetched: tuple[str, ...]
    tools_called: tuple[str, ...]
    deferred_tools: int
    loaded_tools: tuple[str, ...]
    round_limit_reached: bool
    hosted_tools_dropped: tuple[str, ...] = ()  # hosted tools the upstream could not run, left out of its calls
    cache: CacheFigures = field(default_factory=CacheFigures)  # the upstream's cache, and discovery's effect on it
    deferral: str = "tools"  # how found tools reached the upstream (providers.<name>.deferral)

    def as_json(self) -> JsonObject:
        more: JsonObject = (
            {"hosted_tools_dropped": list(self.hosted_tools_dropped)} if self.hosted_tools_dropped else {}
        )
        if self.deferral != "tools":  # fields only added: the default mode's stats read as before
            more["deferral"] = self.deferral
        return {
            "rounds": self.rounds,
            "search_calls": self.search_calls,
            "tools_discovered": list(self.tools_discovered),
            "tools_prefetched": list(self.tools_prefetched),
            "tools_called": list(self.tools_called),
            "deferred_tools": self.deferred_tools,
            "loaded_tools": list(self.loaded_tools),
            "round_limit_reached": self.round_limit_reached,
            **more,
            **self.cache.as_json(),
        }


@dataclass(frozen=True, slots=True)
class Finished:
    """The answer is complete: why it ended, usage summed over rounds, and what discovery did."""

    stop: StopReason
    usage: Usage | None
    discovery: DiscoveryStats
    meta: ResponseMeta = field(default_factory=ResponseMeta)  # the last round's
    extra: Native | None = None  # the last round's upstream-native message fields (a refusal, annotations, ...)


@dataclass(frozen=True, slots=True)
class Failed:
    """The request failed; streams that already sent something report it as an error event."""

    error: GatewayError
    discovery: DiscoveryStats


Event = (
    Routed
    | RoundStarted
    | ContentDelta
    | RefusalDelta
    | ReasoningDelta
    | ReasoningBlock
    | HostedCall
    | ClientToolCall
    | SearchDone
    | McpCallStarted
    | McpCallFinished
    | CallRefused
    | RoundFinished
    | KeepAlive
    | Finished
    | Failed
)
