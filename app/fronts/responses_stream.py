"""The loop's events as the Responses API's stream events, in OpenAI's order, `sequence_number` counting from 0.

One output item is open at a time: text and reasoning deltas fill it until something of another kind comes
(text after reasoning, a client tool call), which closes it (`....done`, `content_part.done`,
`output_item.done`) and opens the next. Text across rounds (before and after a server-side MCP call) stays in one
message, as the plain answer has it. Nothing is written before the upstream answered, so a failure before that
keeps its HTTP status.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.codecs.responses.items import message_item, output_text, reasoning_item, seal
from app.codecs.responses.tools import CALL_PREFIXES, call_item
from app.core.model import JsonObject, Native
from app.engine.events import (
    ClientToolCall,
    ContentDelta,
    DiscoveryStats,
    Event,
    Finished,
    KeepAlive,
    ReasoningDelta,
    RoundFinished,
    RoundStarted,
    Routed,
)
from app.errors import GatewayError
from app.fronts.responses_items import ResponseCall, response_json
from app.fronts.sse_wire import KEEPALIVE, named_sse


@dataclass
class _Open:
    kind: str  # "message" or "reasoning"
    id: str
    index: int
    text: str = ""


class ResponsesStream:
    def __init__(self, state: ResponseCall, model: str) -> None:
        self.state = state
        self.model = model
        self.sequence = 0
        self.committed = False  # response.created went out
        self.output: list[JsonObject] = []
        self.open: _Open | None = None
        self.final: JsonObject = {}  # the completed response, to store
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
            out = self._open(kind)
            assert self.open is not None
            self.open.text += event.text
            where = {"item_id": self.open.id, "output_index": self.open.index, "content_index": 0}
            if kind == "message":
                return [*out, self._event("response.output_text.delta", **where, delta=event.text, logprobs=[])]
            return [*out, self._event("response.reasoning_text.delta", **where, delta=event.text)]
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
            finish_reason=event.finish_reason,
        )  # fmt: skip
        kind = "response.completed" if body["status"] == "completed" else "response.incomplete"
        return [*out, self._event(kind, response=body)], body

    def failure(self, error: GatewayError, discovery: DiscoveryStats | None) -> list[str]:
        out = self._close()
        body = response_json(self.state, self.model, self.output, "failed", None, discovery, error=error)
        code = error.code or error.type
        return [
            *out,
            self._event("error", code=code, message=error.message, param=error.param),
            self._event("response.failed", response=body),
        ]

    def _open(self, kind: str) -> list[str]:
        if self.open is not None and self.open.kind == kind:
            return []
        out = self._close()
        index = len(self.output)
        self.open = _Open(kind, self.state.item_id("msg" if kind == "message" else "rs"), index)
        self.output.append({})  # its place; filled when it closes
        if kind == "message":
            item, part = message_item("", "in_progress", self.open.id), output_text("")
        else:
            item, part = reasoning_item("", "in_progress", self.open.id), {"type": "reasoning_text", "text": ""}
        where = {"item_id": self.open.id, "output_index": index, "content_index": 0}
        return [
            *out,
            self._event("response.output_item.added", output_index=index, item=item),
            self._event("response.content_part.added", **where, part=part),
        ]

    def _close(self) -> list[str]:
        current, self.open = self.open, None
        if current is None:
            return []
        where = {"item_id": current.id, "output_index": current.index, "content_index": 0}
        if current.kind == "message":
            item, part = message_item(current.text, ident=current.id), output_text(current.text)
            done = self._event("response.output_text.done", **where, text=current.text, logprobs=[])
        else:
            item = reasoning_item(current.text, ident=current.id)
            part = {"type": "reasoning_text", "text": current.text}
            done = self._event("response.reasoning_text.done", **where, text=current.text)
        self.output[current.index] = item
        return [
            done,
            self._event("response.content_part.done", **where, part=part),
            self._event("response.output_item.done", output_index=current.index, item=item),
        ]

    def _event(self, kind: str, **fields: object) -> str:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return named_sse(kind, data)
