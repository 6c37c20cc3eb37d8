"""Responses API answers -> the engine's model: a `response` object or its stream events, as deltas, for an
upstream that speaks the Responses API.

Output text (and a refusal's) becomes content; reasoning text, or its summary, reasoning. A call of a client's tool
becomes a tool call under the engine's name for it (a namespace's function `{namespace}__{name}`, a custom tool's
input `{"input": ...}`, a shell's `exec` action, a client tool search's arguments), taken whole from its finished
item. The upstream's own items (reasoning with its `encrypted_content`, hosted calls such as `web_search_call`)
go on whole, for a Responses client, and into the turn's `extra`, so the next round sends them back; a
`response.incomplete` says why (`max_output_tokens` is the engine's `max_tokens`). Answers are checked by the
provider against `answer_types` before they are read here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.codecs.responses.input import OUTPUT_PARTS, OWN_ITEMS
from app.codecs.responses.items import STOP_KINDS
from app.codecs.responses.tools import LOCAL_SHELL, TOOL_SEARCH, action_arguments, custom_arguments, flat_name
from app.core.model import CallFragment, Delta, JsonObject, Native, ResponseMeta, StopReason, Usage, reported_count

USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")
PARAGRAPH = "\n\n"  # between two parts of a reasoning summary, or two reasoning items


def usage_in(usage: Any) -> Usage | None:
    """A Responses usage as the engine's: the cache's counts and the reasoning tokens out of the details typed,
    every other field (the details' others too) kept for a Responses front."""
    if not isinstance(usage, dict):
        return None
    extra: JsonObject = {key: value for key, value in usage.items() if key not in USAGE_FIELDS}
    read, write = _typed_details(extra, "input_tokens_details", ("cached_tokens", "cache_write_tokens"))
    (reasoning,) = _typed_details(extra, "output_tokens_details", ("reasoning_tokens",))
    prompt, completion = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    total = int(usage.get("total_tokens") or prompt + completion)
    return Usage(
        prompt, completion, total, cache_read_tokens=read, cache_write_tokens=write, reasoning_tokens=reasoning,
        extra={"responses": extra} if extra else {},
    )  # fmt: skip


def _typed_details(extra: JsonObject, name: str, typed: tuple[str, ...]) -> list[int | None]:
    """The counts `typed` names taken out of `extra[name]`, which keeps its other fields (or goes when none)."""
    details = extra.pop(name, None)
    if not isinstance(details, dict):
        if details is not None:
            extra[name] = details
        return [None for _ in typed]
    counts = [reported_count(details.get(key)) for key in typed]
    rest = {key: value for key, value in details.items() if not (key in typed and reported_count(value) is not None)}
    if rest:
        extra[name] = rest
    return counts


def meta_of(response: JsonObject) -> ResponseMeta:
    created = response.get("created_at")
    return ResponseMeta(
        id=str(response.get("id") or ""),
        model=str(response.get("model") or ""),
        created=int(created) if isinstance(created, int | float) else 0,
    )


def stop_of(response: JsonObject, called: bool) -> StopReason:
    """Why a response ended: an incomplete one's reason kept as it came (an unknown one counts as running out)."""
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        word = reason if isinstance(reason, str) else ""
        return StopReason(STOP_KINDS.get(word, "max_tokens"), format="responses", raw=word)
    return StopReason("tool_calls" if called else "end")


def reasoning_of(item: JsonObject) -> tuple[str, bool]:
    """A reasoning item's text, and whether it is the summary (when the item has no full text)."""
    parts = [part for part in item.get("content") or () if part.get("type") == "reasoning_text"]
    if parts:
        return "".join(str(part.get("text") or "") for part in parts), False
    summary = [str(part.get("text") or "") for part in item.get("summary") or () if part.get("type") == "summary_text"]
    return PARAGRAPH.join(summary), True


def message_text(item: JsonObject) -> str:
    parts = item.get("content") or ()
    return "".join(str(part.get("text") or part.get("refusal") or "") for part in parts)


def call_of(item: JsonObject) -> tuple[str, str, str] | None:
    """A call of one of the client's tools as the engine's (id, name, arguments); None for any other item."""
    kind = item.get("type")
    if kind in ("function_call", "custom_tool_call"):
        name = str(item["name"])
        name = flat_name(str(item["namespace"]), name) if item.get("namespace") else name
        arguments = str(item["arguments"]) if kind == "function_call" else custom_arguments(str(item["input"]))
        return str(item["call_id"]), name, arguments
    if kind == "local_shell_call":
        return str(item.get("call_id") or item.get("id") or ""), LOCAL_SHELL, action_arguments(item["action"])
    if kind == "tool_search_call" and item.get("execution") == "client":
        given = item.get("arguments")
        query = given if isinstance(given, dict) else {"query": str(given or "")}
        return str(item.get("call_id") or item.get("id") or ""), TOOL_SEARCH, json.dumps(query, ensure_ascii=False)
    return None


def own(items: list[JsonObject], parts: list[JsonObject] | None = None) -> Native | None:
    """The upstream's own items of a turn, to send back with it (the `extra` of its delta), and its messages'
    parts as they came (annotations, logprobs), for a Responses front's message item."""
    if not items and not parts:
        return None
    return Native("responses", {OWN_ITEMS: items, **({OUTPUT_PARTS: parts} if parts else {})})


def delta_from_response(response: JsonObject) -> Delta:
    """A whole `response` as one delta."""
    delta = Delta(usage=usage_in(response.get("usage")), meta=meta_of(response))
    kept: list[JsonObject] = []
    parts: list[JsonObject] = []
    reasoning: list[str] = []
    for item in response.get("output") or ():
        kind, call = item.get("type"), call_of(item)
        if call is not None:
            delta.calls.append(CallFragment(len(delta.calls), *call))
        elif kind == "message":
            delta.content += message_text(item)
            parts += item.get("content") or []
        elif kind == "reasoning":
            text, delta.reasoning_summary = reasoning_of(item)
            reasoning += [text] if text else []
            delta.reasoning_blocks.append(Native("responses", item))
            kept.append(item)
        else:
            delta.hosted_calls.append(Native("responses", item))
            kept.append(item)
    delta.reasoning = PARAGRAPH.join(reasoning)
    delta.extra = own(kept, parts)
    delta.stop = stop_of(response, bool(delta.calls))
    return delta


@dataclass
class StreamDecoder:
    """A Responses stream's events as deltas: text and reasoning as they come, each item whole as it ends."""

    calls: int = 0
    kept: list[JsonObject] = field(default_factory=list)  # the upstream's own items, for the turn's `extra`
    parts: list[JsonObject] = field(default_factory=list)  # its messages' parts as they came, likewise
    streamed: set[int] = field(default_factory=set)  # output indexes whose text came in deltas
    part: tuple[int, int] | None = None  # the reasoning part last streamed: (output index, summary index)
    finished: bool = False

    def deltas(self, event: JsonObject) -> list[Delta]:
        kind = event.get("type")
        if kind == "response.created":
            return [Delta(meta=meta_of(event.get("response") or {}))]
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            self.streamed.add(event.get("output_index") or 0)
            return [Delta(content=str(event.get("delta") or ""))]
        if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            return [self._reasoning(event, summary=kind == "response.reasoning_summary_text.delta")]
        if kind == "response.output_item.done":
            return self._done(event.get("item") or {}, event.get("output_index") or 0)
        if kind in ("response.completed", "response.incomplete"):
            self.finished = True
            response = event.get("response") or {}
            usage = usage_in(response.get("usage"))
            return [Delta(stop=stop_of(response, self.calls > 0), usage=usage, extra=own(self.kept, self.parts))]
        return []  # item openings, argument deltas (each call is read whole as it ends), and event types added later

    def _reasoning(self, event: JsonObject, summary: bool) -> Delta:
        index = event.get("output_index") or 0
        part = (index, event.get("summary_index") or 0)
        text = str(event.get("delta") or "")
        if self.part is not None and self.part != part and text:
            text = PARAGRAPH + text  # a new summary part, or a new reasoning item
        self.part = part
        self.streamed.add(index)
        return Delta(reasoning=text, reasoning_summary=summary)

    def _done(self, item: JsonObject, index: int) -> list[Delta]:
        kind, call = item.get("type"), call_of(item)
        if call is not None:
            self.calls += 1
            return [Delta(calls=[CallFragment(self.calls - 1, *call)])]
        if kind == "message":
            self.parts += item.get("content") or []
            text = message_text(item)
            return [Delta(content=text)] if text and index not in self.streamed else []
        self.kept.append(item)
        if kind != "reasoning":
            return [Delta(hosted_calls=[Native("responses", item)])]
        block = Delta(reasoning_blocks=[Native("responses", item)])
        if index not in self.streamed:  # an upstream that streamed no reasoning text: the item's own
            text, block.reasoning_summary = reasoning_of(item)
            block.reasoning = (PARAGRAPH if self.part is not None and text else "") + text
            self.part = (index, 0) if text else self.part
        return [block]


def failure(event: JsonObject) -> JsonObject | None:
    """The error a stream event reports (`error`, or `response.failed` with its response's error), as an OpenAI
    error body's `error`; None for any other event."""
    kind = event.get("type")
    if kind == "error":
        return {"message": event.get("message"), "code": event.get("code"), "param": event.get("param")}
    if kind == "response.failed":
        return failed(event.get("response") or {})
    return None


def failed(response: JsonObject) -> JsonObject | None:
    """The error of a `response` whose status is `failed`, or None."""
    if response.get("status") != "failed":
        return None
    error = response.get("error") or {}
    return {"message": error.get("message") or "the response failed", "code": error.get("code")}
