"""`POST /v1/responses`: its request read by the Responses codec (`app.codecs.responses`), its answer and its stream.

The request becomes a chat (instructions as a system message, input items as turns, Responses parameters under
the chat names every OpenAI-compatible upstream takes); the answer becomes a `response` with `reasoning`,
`message` and `function_call` output items. A response is stored for its caller unless `store` is false, so
`previous_response_id` continues it. The stream is OpenAI's event sequence, `sequence_number` counting from 0:
`response.created`, `response.in_progress`, each output item opened, filled by its deltas and closed, then
`response.completed` (or `response.incomplete`, or `error` and `response.failed`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace

from app.codecs.responses.compaction import compaction_item
from app.codecs.responses.items import message_item, messages_of, reasoning_item, seal, upstream_parts
from app.codecs.responses.protocol import CompactionTriggerItem, InputItem, ItemReference, ParsedResponses
from app.codecs.responses.requests import chat_request, request_tools
from app.codecs.responses.tools import CALL_PREFIXES, call_item
from app.common.errors import GatewayError
from app.common.identity import Identity
from app.common.offload import OFF_LOOP_BYTES
from app.core.model import ChatRequest, ClientTool, JsonObject, Message, Native, ToolSpec
from app.engine.answer import Answer
from app.engine.api import UNAVAILABLE, ResponseStore, StoredResponse
from app.engine.events import (
    ClientToolCall,
    ContentDelta,
    Event,
    Finished,
    HostedCall,
    ReasoningBlock,
    ReasoningDelta,
)
from app.fronts.base import Call, render_stream
from app.fronts.responses.items import ResponseCall, response_json, response_of_item
from app.fronts.responses.pages import Page, listed
from app.fronts.responses.stream import ResponsesStream
from app.fronts.responses.wire import input_items, loaded_tools, parse_responses_request
from app.fronts.shapes import OPENAI, ErrorShape
from app.fronts.sse_wire import KEEPALIVE

log = logging.getLogger("toolsift.stream")
STORE_WARNING = "x-toolsift-warning"  # on an answer not stored although `store` asked for it


def answer_output(answer: Answer, state: ResponseCall) -> list[JsonObject]:
    """The answer's items: its reasoning (a Responses upstream's own items as they came, with its hosted calls),
    its text, then the calls of the client's tools."""
    output: list[JsonObject] = []
    own = [item.value for item in answer.upstream_items if item.format == "responses"]
    sealed = seal(answer.extra) if state.sealed_reasoning else None
    reasoned = any(item.get("type") == "reasoning" for item in own)  # its text is in these items already
    if (answer.reasoning and not reasoned) or sealed:
        output.append(reasoning_item(answer.reasoning or "", ident=state.item_id("rs"), encrypted=sealed))
    output += [state.shown(item) for item in own]
    if answer.content:
        item = message_item(answer.content, ident=state.item_id("msg"))
        output.append({**item, "content": upstream_parts(answer.extra, answer.content) or item["content"]})
    for call in answer.tool_calls:
        spec = state.specs.get(call.name)
        output.append(call_item(call, spec, state.item_id(CALL_PREFIXES[spec.kind if spec else "function"])))
    return output


class ResponsesFront:
    """`POST /v1/responses`; stored responses for `previous_response_id` and `GET`/`DELETE /v1/responses/{id}`."""

    name = "responses"
    shape: ErrorShape = OPENAI  # how its clients read an error: its own and those the edge answers
    keepalive = KEEPALIVE

    def __init__(self, store: ResponseStore) -> None:
        self.store = store

    def parse(self, body: bytes, call: Call) -> ChatRequest:
        parsed = parse_responses_request(body, call.limits.max_messages, call.limits.max_tools)
        request = chat_request(parsed)
        call.state = ResponseCall(parsed, items=list(parsed.raw_items), size=len(body), specs=_specs(request.tools))
        call.state.compacting = compaction_asked(parsed.items)
        return request

    async def prepare(self, request: ChatRequest, call: Call) -> ChatRequest:
        request = await self._prepare(request, call)
        request.compact = _state(call).compacting
        return request

    async def _prepare(self, request: ChatRequest, call: Call) -> ChatRequest:
        """A `previous_response_id` puts the stored conversation (its input and output items) before the input;
        each `item_reference` is replaced by the item it names. A store known to be down makes the response
        `store: false` from its start, with the warning header."""
        state = _state(call)
        if state.parsed.request.store is not False and not self.store.available():
            _unstored(call, state, UNAVAILABLE)
        previous_id = state.parsed.request.previous_response_id
        referenced = any(isinstance(item, ItemReference) for item in state.parsed.items)
        if previous_id is None and not referenced:
            return request
        earlier: list[JsonObject] = []
        if previous_id is not None:
            stored = await self.store.get(call.identity, previous_id)
            if stored is None:
                raise GatewayError(
                    400, f"Previous response with id '{previous_id}' not found.", param="previous_response_id",
                    code="previous_response_not_found",
                )  # fmt: skip
            earlier, state.tools, state.size = stored.items, stored.tools, state.size + stored.size
            request.loaded_tools = stored.tools  # the tools the conversation found stay loaded, searched once
        raw = await self._resolved(call.identity, state.parsed) if referenced else state.parsed.raw_items
        items = [*earlier, *raw]
        if len(items) > call.limits.max_messages:
            raise GatewayError(
                400, f"Too many input items with the previous response's: {len(items)} (this gateway accepts at "
                f"most {call.limits.max_messages}).", param="input",
            )  # fmt: skip
        state.items = items
        if state.size > OFF_LOOP_BYTES:  # validating a long conversation takes milliseconds
            request.messages, request.tools = await asyncio.to_thread(_continued, items, state.parsed)
        else:
            request.messages, request.tools = _continued(items, state.parsed)
        state.specs = _specs(request.tools)
        return request

    async def _resolved(self, owner: Identity, parsed: ParsedResponses) -> list[JsonObject]:
        """The input with each `item_reference` replaced by the item it names: an output item of one of the
        caller's own stored responses. Any other id is a 400 naming the item."""
        found: dict[str, StoredResponse | None] = {}
        resolved: list[JsonObject] = []
        for index, (raw, item) in enumerate(zip(parsed.raw_items, parsed.items, strict=True)):
            if not isinstance(item, ItemReference):
                resolved.append(raw)
                continue
            response_id = response_of_item(item.id)
            if response_id is not None and response_id not in found:
                found[response_id] = await self.store.get(owner, response_id)
            stored = found.get(response_id) if response_id is not None else None
            output = stored.response["output"] if stored is not None else ()
            match = next((kept for kept in output if kept.get("id") == item.id), None)
            if match is None:
                raise GatewayError(
                    400, f"Item with id '{item.id}' not found: an item_reference names an output item of one of your "
                    "stored responses.", param=f"input[{index}].id", code="item_not_found",
                )  # fmt: skip
            resolved.append(match)
        return resolved

    async def answer(self, answer: Answer, call: Call) -> JsonObject:
        state = _state(call)
        if state.compacting:  # the upstream's compaction item, or the summary the routed model wrote as one
            items = [item for item in answer.upstream_items if item.value.get("type") == "compaction"]
            items = items or [Native("responses", compaction_item(answer.content or "", state.item_id("cmp")))]
            answer = replace(answer, content=None, reasoning=None, tool_calls=[], extra=None, upstream_items=items)
        output = answer_output(answer, state)
        model = answer.meta.model or call.model
        body = response_json(state, model, output, "completed", answer.usage, answer.discovery, stop=answer.stop)
        await self.keep(call, body)
        return body

    async def keep(self, call: Call, body: JsonObject) -> bool:
        """Store the response when asked to; False when it was asked to and is not stored (then `body` says
        `store: false`, and a plain answer carries the warning header)."""
        state = _state(call)
        if state.parsed.request.store is False:
            return True
        if state.unstored is not None:  # known before the answer: said so from its start
            return False
        found = body.get("tool_discovery", {})
        tools = list(
            dict.fromkeys([*state.tools, *found.get("tools_discovered", ()), *found.get("tools_prefetched", ())])
        )
        stored = StoredResponse(body, [*state.items, *state.kept(body["output"])], tools)
        # The answer counts too: a giant streamed answer to a short request is encoded off the loop as well.
        why = await self.store.save(call.identity, stored, state.size + _text_chars(body["output"]))
        if why is None:
            return True
        _unstored(call, state, why)
        body["store"] = False
        return False

    def stream(self, events: AsyncGenerator[Event, None], call: Call) -> AsyncGenerator[str, None]:
        state = _state(call)
        stream = ResponsesStream(state, call.model)
        if state.compacting:
            events = compacted(events, state.item_id("cmp"))

        async def store(texts: list[str]) -> list[str]:
            """The closing event says `store: false` when the store did not take the response."""
            if await self.keep(call, stream.final):
                return texts
            return [*texts[:-1], stream.last_event()]

        return render_stream(events, stream, store)

    def error(self, error: GatewayError) -> JsonObject:
        return self.shape.failure(error)

    def answered(self, error: GatewayError) -> GatewayError:
        return error

    async def retrieve(self, call: Call, response_id: str) -> JsonObject:
        stored = await self.store.get(call.identity, response_id)
        if stored is None:
            raise _not_found(response_id)
        return stored.response

    async def input_items(self, call: Call, response_id: str, page: Page) -> JsonObject:
        """A page of the input items the caller's stored response answered (its own input, and that of the
        responses it continued, as they were sent)."""
        stored = await self.store.get(call.identity, response_id)
        if stored is None:
            raise _not_found(response_id)
        output = stored.response.get("output")
        answered = len(output) if isinstance(output, list) else 0
        return listed(response_id, stored.items[: max(len(stored.items) - answered, 0)], page)

    async def delete(self, call: Call, response_id: str) -> JsonObject:
        if not await self.store.delete(call.identity, response_id):
            raise _not_found(response_id)
        return {"id": response_id, "object": "response.deleted", "deleted": True}


def compaction_asked(items: list[InputItem]) -> bool:
    """Whether the input asks for a compaction: a `compaction_trigger` last (anywhere else is a 400)."""
    for index, item in enumerate(items):
        if isinstance(item, CompactionTriggerItem) and index != len(items) - 1:
            raise GatewayError(400, f"Invalid request: 'input[{index}]': a compaction_trigger must be the last input "
                               "item.", param=f"input[{index}]")  # fmt: skip
    return bool(items) and isinstance(items[-1], CompactionTriggerItem)


async def compacted(events: AsyncGenerator[Event, None], ident: str) -> AsyncGenerator[Event, None]:
    """A compaction's events: the upstream's own compaction item, or the summary's text, not shown as it comes
    but ended as one compaction item."""
    summary: list[str] = []
    native = False
    async with aclosing(events):
        async for event in events:
            if isinstance(event, ContentDelta):
                summary.append(event.text)
            elif isinstance(event, HostedCall) and event.native.value.get("type") == "compaction":
                native = True
                yield event
            elif isinstance(event, Finished):
                if not native:
                    yield HostedCall(Native("responses", compaction_item("".join(summary), ident)))
                yield event
            elif not isinstance(event, ReasoningDelta | ReasoningBlock | ClientToolCall | HostedCall):
                yield event


def _continued(items: list[JsonObject], parsed: ParsedResponses) -> tuple[list[Message], list[ClientTool]]:
    """The whole conversation's messages, and the request's tools with those its tool searches loaded."""
    typed = input_items(items)
    conversation = replace(parsed, items=typed, loaded=loaded_tools(typed))
    return messages_of(typed, parsed.request.instructions), request_tools(conversation)


def _specs(tools: list[ClientTool]) -> dict[str, ToolSpec]:
    return {tool.spec.name: tool.spec for tool in tools}


def _unstored(call: Call, state: ResponseCall, why: str) -> None:
    """The response is not stored although asked to be: it says `store: false`, and the header says why."""
    state.unstored = why
    call.reply_headers[STORE_WARNING] = f"response not stored: {why}"


def _not_found(response_id: str) -> GatewayError:
    return GatewayError(404, f"Response with id '{response_id}' not found.", param="response_id", code="not_found")


def _state(call: Call) -> ResponseCall:
    assert isinstance(call.state, ResponseCall), "parse() runs first"
    return call.state


def _text_chars(value: object) -> int:
    """The characters of every string in a JSON value: what encoding it costs, give or take its structure."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_text_chars(item) for item in value.values())
    if isinstance(value, list):
        return sum(_text_chars(item) for item in value)
    return 0
