"""The loop's events as the Responses API's stream events, in OpenAI's order, `sequence_number` counting from 0.

One output item is open at a time: text and reasoning deltas fill it until something of another kind comes
(text after reasoning, a client tool call), which closes it (`....done`, `content_part.done`,
`output_item.done`) and opens the next. Text across rounds (before and after a server-side MCP call) stays in one
message, as the plain answer has it. A Responses upstream's own items end as they came: its reasoning item closes
the reasoning open for it (a summary streamed as `reasoning_summary_text`), its hosted calls (a web search) are
items of their own. Nothing is written before the upstream answered, so a failure before that keeps its HTTP
status.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.codecs.responses.items import message_item, output_text, reasoning_item, seal, upstream_parts
from app.codecs.responses.tools import CALL_PREFIXES, call_item
from app.common.errors import GatewayError
from app.core.model import JsonObject, Native
from app.engine.events import (
    ClientToolCall,
    ContentDelta,
    DiscoveryStats,
    Event,
    Finished,
    HostedCall,
    KeepAlive,
    ReasoningBlock,
    ReasoningDelta,
    RoundFinished,
    RoundStarted,
    Routed,
)
from app.fronts.responses.items import ResponseCall, response_json
from app.fronts.sse_wire import KEEPALIVE, named_sse


@dataclass
class _Open:
    kind: str  # "message" or "reasoning"
    id: str
    index: int
    text: str = ""
    summary: bool = False  # reasoning streamed as its summary


class ResponsesStream:
    def __init__(self, state: ResponseCall, model: str) -> None:
        self.state = state
        self.model = model
        self.sequence = 0
        self.committed = False  # response.created went out
        self.output: list[JsonObject] = []
        self.open: _Open | None = None
        self.final: JsonObject = {}  # the completed response, to store
        self._last = ("", 0)  # the closing event's type and sequence number
        self.round_extra: Native | None = None  # the last round's own fields, sealed for the client once it ends

    def render(self, event: Event) -> list[str]:
        if isinstance(event, Routed):  # the upstream's name for the model, answered with
            self.model = event.model
            return []
        if isinstance(event, Finished):
            texts, self.final = self._finished(event)
            return texts
        if isinstance(event, KeepAlive):
            return [KEEPALIVE]
        if isinstance(event, RoundFinished):
            self.round_extra = event.extra
            return []
        if isinstance(event, ReasoningBlock | HostedCall):  # only a Responses upstream's are items here
            native = event.native
            return self._own(native.value, isinstance(event, ReasoningBlock)) if native.format == "responses" else []
        if not isinstance(event, RoundStarted | ContentDelta | ReasoningDelta | ClientToolCall):
            return []
        if isinstance(event, RoundStarted):
            self.round_extra = None  # a round the gateway answered itself: the client never passes it back
            if self.committed:
                return []
            self.committed = True
            self.model = event.meta.model or self.model
            response = response_json(self.state, self.model, [], "in_progress")
            created = self._event("response.created", response=response)
            return [created, self._event("response.in_progress", response=response)]
        if isinstance(event, ContentDelta | ReasoningDelta):
            kind = "message" if isinstance(event, ContentDelta) else "reasoning"
            out = self._open(kind, isinstance(event, ReasoningDelta) and event.summary)
            assert self.open is not None
            self.open.text += event.text
            where = {"item_id": self.open.id, "output_index": self.open.index}
            if kind == "message":
                text = self._event(
                    "response.output_text.delta", **where, content_index=0, delta=event.text, logprobs=[]
                )
                return [*out, text]
            if self.open.summary:
                return [*out, self._event("response.reasoning_summary_text.delta", **where, summary_index=0,
                                          delta=event.text)]  # fmt: skip
            return [*out, self._event("response.reasoning_text.delta", **where, content_index=0, delta=event.text)]
        out = [*self._close(), *self._sealed()]
        index = len(self.output)
        spec = self.state.specs.get(event.call.name)
        kind = spec.kind if spec is not None else "function"
        item = call_item(event.call, spec, self.state.item_id(CALL_PREFIXES[kind]))
        self.output.append(item)
        where = {"item_id": item["id"], "output_index": index}
        added = call_item(event.call, spec, item["id"], "in_progress")
        out.append(self._event("response.output_item.added", output_index=index, item=added))
        if kind == "custom":
            text = item["input"]
            out.append(self._event("response.custom_tool_call_input.delta", **where, delta=text))
            out.append(self._event("response.custom_tool_call_input.done", **where, input=text))
        elif kind == "function":
            arguments = event.call.arguments
            out.append(self._event("response.function_call_arguments.delta", **where, delta=arguments))
            out.append(
                self._event("response.function_call_arguments.done", **where, name=item["name"], arguments=arguments)
            )
        return [*out, self._event("response.output_item.done", output_index=index, item=item)]

    def _own(self, item: JsonObject, reasoning: bool) -> list[str]:
        """A Responses upstream's own item, ended: its reasoning closes the reasoning item open for it (with the
        item as it came), anything else is an item of its own, opened and ended at once."""
        if reasoning and self.open is not None and self.open.kind == "reasoning":
            return self._close(self.state.shown(item, self.open.id))
        out = self._close()
        index = len(self.output)
        shown = self.state.shown(item)
        self.output.append(shown)
        return [
            *out,
            self._event("response.output_item.added", output_index=index, item={**shown, "status": "in_progress"}),
            self._event("response.output_item.done", output_index=index, item=shown),
        ]

    def _sealed(self) -> list[str]:
        """What the final round's upstream gave of its own reasoning, as a reasoning item the client passes back
        (when it asked for `reasoning.encrypted_content`), before the turn's calls and its end."""
        extra, self.round_extra = self.round_extra, None
        sealed = seal(extra) if self.state.sealed_reasoning else None
        if sealed is None:
            return []
        index = len(self.output)
        item = reasoning_item("", ident=self.state.item_id("rs"), encrypted=sealed)
        self.output.append(item)
        return [
            self._event("response.output_item.added", output_index=index, item={**item, "status": "in_progress"}),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _finished(self, event: Finished) -> tuple[list[str], JsonObject]:
        """The closing events and the final response (to store)."""
        out = [*self._close(), *self._sealed()]
        body = response_json(
            self.state, self.model, self.output, "completed", event.usage, event.discovery,
            stop=event.stop,
        )  # fmt: skip
        kind = "response.completed" if body["status"] == "completed" else "response.incomplete"
        self._last = (kind, self.sequence)
        return [*out, self._event(kind, response=body)], body

    def last_event(self) -> str:
        """The closing event once more, as the final response now reads (`store` false when the store could not
        take it)."""
        kind, sequence = self._last
        return named_sse(kind, {"type": kind, "sequence_number": sequence, "response": self.final})

    def failure(self, error: GatewayError, discovery: DiscoveryStats | None) -> list[str]:
        out = self._close()
        body = response_json(self.state, self.model, self.output, "failed", None, discovery, error=error)
        code = error.code or error.type
        return [
            *out,
            self._event("error", code=code, message=error.message, param=error.param),
            self._event("response.failed", response=body),
        ]

    def _open(self, kind: str, summary: bool = False) -> list[str]:
        if self.open is not None and self.open.kind == kind:
            return []
        out = self._close()
        index = len(self.output)
        self.open = _Open(kind, self.state.item_id("msg" if kind == "message" else "rs"), index, summary=summary)
        self.output.append({})  # its place; filled when it closes
        where = {"item_id": self.open.id, "output_index": index}
        if kind == "message":
            item, part = message_item("", "in_progress", self.open.id), output_text("")
        else:
            item = reasoning_item("", "in_progress", self.open.id)
            part = {"type": "summary_text" if summary else "reasoning_text", "text": ""}
        added = self._event("response.output_item.added", output_index=index, item=item)
        if summary:
            return [*out, added, self._event("response.reasoning_summary_part.added", **where, summary_index=0,
                                             part=part)]  # fmt: skip
        return [*out, added, self._event("response.content_part.added", **where, content_index=0, part=part)]

    def _close(self, final: JsonObject | None = None) -> list[str]:
        """The open item ended: `final` is the item as its upstream ended it, else the one its text makes."""
        current, self.open = self.open, None
        if current is None:
            return []
        where = {"item_id": current.id, "output_index": current.index}
        if current.kind == "message":
            item, part = message_item(current.text, ident=current.id), output_text(current.text)
            item["content"] = upstream_parts(self.round_extra, current.text) or item["content"]
            done = self._event("response.output_text.done", **where, content_index=0, text=current.text, logprobs=[])
            closed = [done, self._event("response.content_part.done", **where, content_index=0, part=part)]
        elif current.summary:
            part = {"type": "summary_text", "text": current.text}
            item = {**reasoning_item("", ident=current.id), "summary": [part]}
            closed = [
                self._event("response.reasoning_summary_text.done", **where, summary_index=0, text=current.text),
                self._event("response.reasoning_summary_part.done", **where, summary_index=0, part=part),
            ]
        else:
            item = reasoning_item(current.text, ident=current.id)
            part = {"type": "reasoning_text", "text": current.text}
            closed = [
                self._event("response.reasoning_text.done", **where, content_index=0, text=current.text),
                self._event("response.content_part.done", **where, content_index=0, part=part),
            ]
        item = final or item
        self.output[current.index] = item
        return [*closed, self._event("response.output_item.done", output_index=current.index, item=item)]

    def _event(self, kind: str, **fields: object) -> str:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return named_sse(kind, data)
