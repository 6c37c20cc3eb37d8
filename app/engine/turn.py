"""One round's assistant turn, assembled from the deltas an upstream sends (a plain answer is a single delta)."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.core.model import CallFragment, Delta, JsonObject, Message, Native, ResponseMeta, StopReason, ToolCall, Usage


@dataclass
class Turn:
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_field: str | None = None
    calls: dict[int, ToolCall] = field(default_factory=dict)
    stop: StopReason | None = None
    usage: Usage | None = None
    meta: ResponseMeta | None = None
    extra: Native | None = None
    started: bool = False

    def add(self, delta: Delta) -> None:
        self.started = True
        if delta.content:
            self.content.append(delta.content)
        if delta.reasoning:
            self.reasoning.append(delta.reasoning)
            self.reasoning_field = delta.reasoning_field
        for fragment in delta.calls:
            self._add_call(fragment)
        if delta.stop is not None:
            self.stop = delta.stop
        if delta.usage is not None:
            if self.usage is None:
                self.usage = Usage()
            self.usage.add(delta.usage)
        if delta.meta is not None and self.meta is None:
            self.meta = delta.meta
        if delta.extra is not None:
            self.extra = delta.extra

    def _add_call(self, fragment: CallFragment) -> None:
        call = self.calls.get(fragment.index)
        if call is None:
            call = self.calls[fragment.index] = ToolCall("", "", "")
        if fragment.id:
            call.id = fragment.id
        call.name += fragment.name
        call.arguments += fragment.arguments

    def tool_calls(self) -> list[ToolCall]:
        return [self.calls[index] for index in sorted(self.calls)]

    def message(self, calls: list[ToolCall]) -> Message:
        """The turn as the conversation's next assistant message, with the calls the gateway answers."""
        return Message(
            role="assistant",
            content="".join(self.content) or None,
            tool_calls=calls,
            reasoning="".join(self.reasoning) or None,
            reasoning_field=self.reasoning_field,
            extra=self.extra,
        )


def merged_logprobs(total: JsonObject | None, more: JsonObject | None) -> JsonObject | None:
    """Logprobs of consecutive pieces of text as one object: the token lists (`content`, `refusal`) joined."""
    if more is None:
        return total
    if total is None:
        return {key: list(value) if isinstance(value, list) else value for key, value in more.items()}
    for key, value in more.items():
        if isinstance(value, list) and isinstance(total.get(key), list):
            total[key].extend(value)
        elif total.get(key) is None:
            total[key] = value
    return total
