"""Responses API answers -> the engine's model: a `response` object or its stream events, as deltas, for an
upstream that speaks the Responses API.

Output text becomes content, reasoning text (or its summary) reasoning, each `function_call` item a tool call; a
`response.incomplete` says why (`max_output_tokens` is the engine's `length`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.codecs.responses.items import INCOMPLETE
from app.core.model import CallFragment, Delta, JsonObject, ResponseMeta, Usage

FINISH_REASONS = {reason: finish for finish, reason in INCOMPLETE.items()}  # incomplete_details.reason -> finish
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens", "input_tokens_details", "output_tokens_details")


def usage_in(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    extra: JsonObject = {key: value for key, value in usage.items() if key not in USAGE_FIELDS}
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    if isinstance(cached, int):
        extra["prompt_tokens_details"] = {"cached_tokens": cached}
    if isinstance(reasoning, int):
        extra["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    prompt, completion = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return Usage(prompt, completion, int(usage.get("total_tokens") or prompt + completion), extra)


def meta_of(response: JsonObject) -> ResponseMeta:
    created = response.get("created_at")
    return ResponseMeta(
        id=str(response.get("id") or ""),
        model=str(response.get("model") or ""),
        created=int(created) if isinstance(created, int | float) else 0,
    )


def finish_reason(response: JsonObject, called: bool) -> str:
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return FINISH_REASONS.get(str(reason), "length")
    return "tool_calls" if called else "stop"


def _reasoning_text(item: JsonObject) -> str:
    parts = [part for part in item.get("content") or () if part.get("type") == "reasoning_text"]
    parts = parts or [part for part in item.get("summary") or () if part.get("type") == "summary_text"]
    return "".join(str(part.get("text") or "") for part in parts)


def delta_from_response(response: JsonObject) -> Delta:
    """A whole `response` as one delta."""
    delta = Delta(usage=usage_in(response.get("usage")), meta=meta_of(response))
    for item in response.get("output") or ():
        kind = item.get("type")
        if kind == "message":
            delta.content += "".join(
                str(part.get("text") or "") for part in item.get("content") or () if part.get("type") == "output_text"
            )
        elif kind == "reasoning":
            delta.reasoning += _reasoning_text(item)
        elif kind == "function_call":
            arguments = str(item.get("arguments") or "")
            delta.calls.append(CallFragment(len(delta.calls), str(item.get("call_id") or ""), item["name"], arguments))
    delta.finish_reason = finish_reason(response, bool(delta.calls))
    return delta


@dataclass
class StreamDecoder:
    """A Responses stream's events as deltas: text and reasoning as they come, calls by output item."""

    calls: dict[int, int] = field(default_factory=dict)  # output index -> the engine's tool-call index

    def deltas(self, event: JsonObject) -> list[Delta]:
        kind = event.get("type")
        if kind == "response.created":
            return [Delta(meta=meta_of(event.get("response") or {}))]
        if kind == "response.output_text.delta":
            return [Delta(content=str(event.get("delta") or ""))]
        if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            return [Delta(reasoning=str(event.get("delta") or ""))]
        item = event.get("item") or {}
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            index = self.calls.setdefault(int(event.get("output_index") or 0), len(self.calls))
            return [Delta(calls=[CallFragment(index, str(item.get("call_id") or ""), str(item.get("name") or ""))])]
        if kind == "response.function_call_arguments.delta" and event.get("output_index") in self.calls:
            call = CallFragment(self.calls[event["output_index"]], arguments=str(event.get("delta") or ""))
            return [Delta(calls=[call])]
        if kind in ("response.completed", "response.incomplete"):
            response = event.get("response") or {}
            return [
                Delta(finish_reason=finish_reason(response, bool(self.calls)), usage=usage_in(response.get("usage")))
            ]
        return []
