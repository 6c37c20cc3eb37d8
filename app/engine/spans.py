"""The engine's spans (app/common/tracing.py is the seam): one per request, one per upstream round, one per search, in
the GenAI semantic conventions' names; the MCP client records one per MCP call below them.

A request's span is `invoke_agent toolsift` (the gateway runs the tool loop as an agent would), its rounds are
`chat {model}` and a search is `execute_tool search_tools`; counts, names and ids only, never message contents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.codecs.openai_chat.answers import finish_reason_of
from app.common import tracing
from app.common.errors import GatewayError
from app.common.tracing import NOOP, Span
from app.config import Config
from app.core.model import ChatRequest, ResponseMeta, StopReason, ToolCall, Usage
from app.discovery.search import SearchOutcome
from app.engine.caller import Caller
from app.engine.events import Failed, Finished

AGENT = "toolsift"
SEARCH = "search_tools"
# gen_ai.provider.name by the upstream's wire format (an OpenAI-compatible server speaks OpenAI's)
SYSTEMS = {"anthropic": "anthropic", "openai": "openai", "openai_responses": "openai"}


@dataclass(frozen=True, slots=True)
class RequestTrace:
    """A request's span and what its round spans say about the upstream; `NO_TRACE` when tracing is off."""

    span: Span = NOOP
    upstream: dict[str, tracing.AttributeValue] = field(default_factory=dict)

    def round(self, number: int, model: str, stream: bool) -> Span:
        if not self.span.recording:
            return NOOP
        attributes: tracing.Attributes = {
            tracing.OPERATION: "chat",
            tracing.REQUEST_MODEL: model,
            tracing.REQUEST_STREAM: stream,
            "toolsift.round": number,
            **self.upstream,
        }
        return self.span.child(f"chat {model}", attributes, "client")

    def search(self, call: ToolCall) -> Span:
        return self.span.child(f"execute_tool {SEARCH}", search_attributes(call.id)) if self.span.recording else NOOP


NO_TRACE = RequestTrace()


def request_trace(request: ChatRequest, caller: Caller) -> RequestTrace:
    """The request's span, begun before it is routed (a refusal is traced too)."""
    if not tracing.enabled():
        return NO_TRACE
    attributes: tracing.Attributes = {
        tracing.OPERATION: "invoke_agent",
        tracing.AGENT_NAME: AGENT,
        tracing.REQUEST_MODEL: request.model,
        tracing.REQUEST_STREAM: request.stream,
    }
    caller_attributes = tracing.caller_attributes(caller.identity.id, caller.request_id, caller.front)
    if not caller.front:  # the MCP front's run_task: its front is the scope's
        del caller_attributes[tracing.FRONT]
    return RequestTrace(tracing.start(f"invoke_agent {AGENT}", attributes, caller=caller_attributes))


def routed(trace: RequestTrace, config: Config, provider: str) -> RequestTrace:
    """The trace with its upstream known: the round spans' provider attributes."""
    if not trace.span.recording:
        return trace
    configured = config.providers.get(provider)
    upstream: dict[str, tracing.AttributeValue] = {
        tracing.PROVIDER: SYSTEMS.get(configured.type if configured else "openai", "openai"),
        "toolsift.provider": provider,
    }
    trace.span.set(upstream)
    return RequestTrace(trace.span, upstream)


def observe(trace: RequestTrace, event: Finished | Failed) -> None:
    """What the request's last event says of it (its usage and model, or why it failed); the span ends there,
    whether or not its reader reads on."""
    if not trace.span.recording:
        return
    if isinstance(event, Finished):
        trace.span.set(
            {
                tracing.RESPONSE_MODEL: event.meta.model or None,
                tracing.FINISH_REASONS: [finish_reason_of(event.stop)],
                **usage_attributes(event.usage),
                "toolsift.rounds": event.discovery.rounds,
                "toolsift.searches": event.discovery.search_calls,
                "toolsift.tools_called": len(event.discovery.tools_called),
            }
        )
    else:
        trace.span.set({"toolsift.rounds": event.discovery.rounds, "toolsift.searches": event.discovery.search_calls})
        failed(trace.span, event.error)
    trace.span.end()


def failed(span: Span, error: BaseException) -> None:
    if isinstance(error, GatewayError):
        span.fail(error.code or str(error.status), error.message)
    else:
        span.fail(type(error).__qualname__, str(error))


def round_finished(span: Span, meta: ResponseMeta | None, usage: Usage | None, stop: StopReason | None) -> None:
    if span.recording and meta is not None:
        span.set({tracing.RESPONSE_MODEL: meta.model or None, tracing.RESPONSE_ID: meta.id or None})
    if span.recording:
        span.set({**usage_attributes(usage), tracing.FINISH_REASONS: [finish_reason_of(stop)] if stop else None})
    span.end()


def usage_attributes(usage: Usage | None) -> dict[str, tracing.AttributeValue]:
    if usage is None:
        return {}
    return {tracing.INPUT_TOKENS: usage.input_tokens, tracing.OUTPUT_TOKENS: usage.output_tokens}


def search_attributes(call_id: str | None = None) -> tracing.Attributes:
    return {tracing.OPERATION: "execute_tool", tracing.TOOL_NAME: SEARCH, tracing.TOOL_CALL_ID: call_id or None}


def searched(span: Span, outcome: SearchOutcome | None) -> None:
    """A search span's counts (never its query text); None: its arguments were not an object."""
    if span.recording:
        if outcome is None:
            span.fail("invalid_arguments", "the search's arguments are not a JSON object")
        else:
            span.set(
                {
                    "toolsift.search.queries": len(outcome.queries),
                    "toolsift.search.results": len(outcome.found),
                    "toolsift.search.related": len(outcome.related),
                    "toolsift.search.weak": outcome.weak,
                }
            )
