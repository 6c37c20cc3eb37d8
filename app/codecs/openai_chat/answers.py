"""OpenAI chat-completions answers <-> the engine's model: an upstream's completion or stream chunk in, as a
delta (read only after its shape was checked, `answer_types`); the pieces of an answer (usage, tool calls) out.
"""

from __future__ import annotations

from typing import Any

from app.codecs.openai_chat.protocol import REASONING_FIELDS
from app.core.model import (
    CallFragment,
    Delta,
    JsonObject,
    Native,
    ResponseMeta,
    StopKind,
    StopReason,
    ToolCall,
    Usage,
    reported_count,
)

MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", "tool_call_id", "function_call", *REASONING_FIELDS})
READ_MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", "tool_call_id", *REASONING_FIELDS})
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
CACHE_DETAILS = ("cached_tokens", "cache_write_tokens")  # typed in Usage, out of `prompt_tokens_details`
REASONING_DETAILS = ("reasoning_tokens",)  # typed in Usage, out of `completion_tokens_details`
# Finish reasons as neutral kinds; a word not here is `other`, and the word itself goes back to a chat client.
STOP_KINDS: dict[str, StopKind] = {
    "stop": "end", "length": "max_tokens", "tool_calls": "tool_calls", "function_call": "tool_calls",
    "content_filter": "refused",
}  # fmt: skip
FINISH_REASONS: dict[StopKind, str] = {
    "end": "stop", "stop_sequence": "stop", "pause": "stop", "other": "stop", "max_tokens": "length",
    "tool_calls": "tool_calls", "refused": "content_filter",
}  # fmt: skip
META_FIELDS = frozenset({"id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier"})


def usage_from_openai(usage: Any) -> Usage | None:
    """A chat usage as the engine's: the cache's counts out of `prompt_tokens_details` and the reasoning tokens out
    of `completion_tokens_details` typed, every other field (the details' others too) kept for a chat front."""
    if not isinstance(usage, dict):
        return None
    extra = {key: value for key, value in usage.items() if key not in USAGE_FIELDS}
    read, write = _typed_details(extra, "prompt_tokens_details", CACHE_DETAILS)
    (reasoning,) = _typed_details(extra, "completion_tokens_details", REASONING_DETAILS)
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        total_tokens=usage.get("total_tokens") or 0,
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=reasoning,
        extra={"openai": extra} if extra else {},
    )


def _typed_details(extra: JsonObject, name: str, typed: tuple[str, ...]) -> list[int | None]:
    """The counts `typed` names taken out of `extra[name]` (which keeps its other fields, or goes when it held only
    counts typed); a details object with none of them stays as it came."""
    details = extra.get(name)
    if not isinstance(details, dict):
        return [None for _ in typed]
    counts = [reported_count(details.get(key)) for key in typed]
    if all(count is None for count in counts):
        return counts
    rest = {key: value for key, value in details.items() if not (key in typed and reported_count(value) is not None)}
    if rest:
        extra[name] = rest
    else:
        del extra[name]
    return counts


def _meta(answer: JsonObject) -> ResponseMeta:
    fingerprint, tier = answer.get("system_fingerprint"), answer.get("service_tier")
    others = {key: value for key, value in answer.items() if key not in META_FIELDS and key != "tool_discovery"}
    others |= {key: None for key in ("system_fingerprint", "service_tier") if key in answer and answer[key] is None}
    return ResponseMeta(
        id=str(answer.get("id") or ""),
        model=str(answer.get("model") or ""),
        created=answer["created"] if isinstance(answer.get("created"), int) else 0,
        system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        service_tier=tier if isinstance(tier, str) else None,
        extra=Native("openai", others) if others else None,
    )


def delta_from_completion(completion: JsonObject) -> Delta:
    """A whole (checked) chat completion as one delta."""
    choice = completion["choices"][0]
    message = choice.get("message") or {}
    reasoning_field = next((key for key in REASONING_FIELDS if isinstance(message.get(key), str)), None)
    others = {key: value for key, value in message.items() if key not in MESSAGE_FIELDS}
    content = message.get("content")
    return Delta(
        content=content if isinstance(content, str) else "",
        refusal=message["refusal"] if isinstance(message.get("refusal"), str) else "",
        reasoning=message.get(reasoning_field) or "" if reasoning_field else "",
        reasoning_field=reasoning_field,
        calls=[_fragment(index, call) for index, call in enumerate(message.get("tool_calls") or ())],
        stop=stop_from_openai(choice.get("finish_reason")),
        usage=usage_from_openai(completion.get("usage")),
        logprobs=choice.get("logprobs") if isinstance(choice.get("logprobs"), dict) else None,
        meta=_meta(completion),
        extra=Native("openai", others) if others else None,
    )


class ReasoningDetails:
    """A streamed turn's `reasoning_details` (OpenRouter's reasoning, which its upstreams need back on the next
    round to go on after a tool call), assembled from the pieces each chunk carries: a piece with the index and
    type of an earlier one continues it (its texts appended, its other fields such as a signature added)."""

    TEXTS = ("text", "summary", "data")

    def __init__(self) -> None:
        self.items: list[JsonObject] = []

    def add(self, pieces: list[Any]) -> list[JsonObject]:
        for piece in pieces:
            if not isinstance(piece, dict):
                continue
            same = next(
                (item for item in self.items if "index" in piece and
                 (item.get("index"), item.get("type")) == (piece.get("index"), piece.get("type"))),
                None,
            )  # fmt: skip
            if same is None:
                self.items.append(dict(piece))
                continue
            for key, value in piece.items():
                if key in self.TEXTS and isinstance(value, str) and isinstance(same.get(key), str):
                    same[key] += value
                elif value is not None and same.get(key) is None:
                    same[key] = value
        return [dict(item) for item in self.items]


def delta_from_chunk(chunk: JsonObject, details: ReasoningDetails | None = None) -> Delta:
    """One (checked) stream chunk as a delta; choices other than index 0 are ignored (the gateway asks for one).
    With `details`, a chunk's `reasoning_details` pieces are added to the turn's so far, which the delta carries
    whole (a turn keeps its latest delta's extra fields)."""
    delta = Delta(usage=usage_from_openai(chunk.get("usage")), meta=_meta(chunk))
    for choice in chunk.get("choices") or ():
        if choice.get("index", 0) != 0:
            continue
        wire = choice.get("delta") or {}
        if isinstance(wire.get("content"), str):
            delta.content = wire["content"]
        if isinstance(wire.get("refusal"), str):
            delta.refusal = wire["refusal"]
        for key in REASONING_FIELDS:
            if isinstance(wire.get(key), str) and wire[key]:
                delta.reasoning, delta.reasoning_field = wire[key], key
        for position, fragment in enumerate(wire.get("tool_calls") or ()):
            delta.calls.append(_fragment(fragment.get("index", position), fragment))
        if details is not None and isinstance(wire.get("reasoning_details"), list):
            delta.extra = Native("openai", {"reasoning_details": details.add(wire["reasoning_details"])})
        if choice.get("finish_reason"):
            delta.stop = stop_from_openai(choice["finish_reason"])
        if isinstance(choice.get("logprobs"), dict):
            delta.logprobs = choice["logprobs"]
    return delta


def stop_from_openai(finish_reason: object) -> StopReason | None:
    """A finish reason as the engine's, its word kept (a chat client gets back `function_call` as it came)."""
    if not isinstance(finish_reason, str) or not finish_reason:
        return None
    return StopReason(STOP_KINDS.get(finish_reason, "other"), format="openai", raw=finish_reason)


def finish_reason_of(stop: StopReason) -> str:
    """The engine's stop reason as a chat finish reason: an OpenAI-compatible upstream's own word as it came."""
    return stop.said_in("openai") or FINISH_REASONS[stop.kind]


def _fragment(index: int, call: JsonObject) -> CallFragment:
    function = call.get("function") or {}
    return CallFragment(index, call.get("id") or "", function.get("name") or "", function.get("arguments") or "")


def usage_json(usage: Usage) -> JsonObject:
    """Usage in chat's terms: the typed counts in their details objects, beside what a chat upstream said more."""
    body: JsonObject = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        **usage.extra_in("openai"),
    }
    counts = (usage.cache_read_tokens, usage.cache_write_tokens)
    _add_details(body, "prompt_tokens_details", dict(zip(CACHE_DETAILS, counts, strict=True)))
    _add_details(body, "completion_tokens_details", {"reasoning_tokens": usage.reasoning_tokens})
    return body


def _add_details(body: JsonObject, name: str, counts: dict[str, int | None]) -> None:
    typed = {key: count for key, count in counts.items() if count is not None}
    if typed:
        details = body.get(name)
        body[name] = {**typed, **(details if isinstance(details, dict) else {})}


def tool_call_json(call: ToolCall) -> JsonObject:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
