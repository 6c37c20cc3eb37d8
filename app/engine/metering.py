"""A request's upstream tokens as the gateway counts them itself, for `tokens_per_day`: the estimate a request
reserves at admission (its prompt's tokens plus the most its answer may take), and what a round costs when its
upstream reports no usage (a stream that ignored the request for it, a plain answer without `usage`, a client that
left mid-answer), so that no way of asking spends tokens the budget never sees.

Counted with the gateway's tokenizer (app/common/tokens.py): a prompt may be megabytes, so it is counted in the worker
pool, one prompt at a time, exactly up to `EXACT_PROMPT_CHARS` and estimated past them; a round's answer is
counted on the loop, exactly up to `EXACT_OUTPUT_CHARS`. Only identities with a `tokens_per_day` pay for either.
"""

from __future__ import annotations

import json

from app.common import tokens
from app.common.offload import Lane
from app.core.model import ChatRequest, Message, Part
from app.engine.events import (
    ClientToolCall,
    ContentDelta,
    Event,
    ReasoningDelta,
    RefusalDelta,
    RoundFinished,
    RoundStarted,
)

EXACT_PROMPT_CHARS = 32_000  # 16 ms of prose, 65 ms of random words (2 cores); past it, 4 characters a token
EXACT_OUTPUT_CHARS = 4_000  # on the loop: at most about 12 ms of the worst text, once a round


async def prompt_tokens(request: ChatRequest, lane: Lane) -> int:
    """The tokens of the request's messages and client tools as the upstream will read them, roughly; counted in
    `lane` (one at a time), so a flood of large prompts waits its turn there, taking at most one of the pool's
    workers."""
    return await lane.run(_count_prompt, request)


def _count_prompt(request: ChatRequest) -> int:
    pieces: list[str] = []
    for message in request.messages:
        _message_text(message, pieces)
    for tool in request.tools:
        spec = tool.spec
        pieces += [spec.name, spec.description, json.dumps(spec.parameters, ensure_ascii=False)]
    return tokens.count_text("\n".join(pieces), EXACT_PROMPT_CHARS) + 4 * len(request.messages)


def _message_text(message: Message, pieces: list[str]) -> None:
    if isinstance(message.content, str):
        pieces.append(message.content)
    else:
        pieces.extend(_part_text(part) for part in message.content or ())
    if message.reasoning:
        pieces.append(message.reasoning)
    for call in message.tool_calls:
        pieces += [call.name, call.arguments]


def _part_text(part: Part) -> str:
    if part.kind == "text":
        return part.text
    return part.url[:4096]  # an image's data URL is read as an image, not as text: a bound, not its size


class TokenMeter:
    """The tokens a request's rounds cost: the upstream's usage where it reported one, else the round's prompt (the
    request's, and every earlier round's answer) plus the answer's text and tool calls counted here."""

    def __init__(self, request: ChatRequest, answer: int, lane: Lane) -> None:
        self.request, self.answer, self.lane = request, answer, lane
        self.prompt = 0
        self.spent = 0
        self._answer: list[str] = []
        self._open = False  # a round whose upstream began answering and has not finished
        self._reported = False  # the last finished round's upstream reported its usage
        self._calls: list[str] = []  # the client's calls of an unreported round, counted at the end

    async def estimate(self) -> int:
        """What the request reserves against the day's budget: its prompt's tokens and the most its answer may take."""
        self.prompt = await prompt_tokens(self.request, self.lane)
        return self.prompt + self.answer

    def observe(self, event: Event) -> None:
        if isinstance(event, RoundStarted):
            self._open, self._answer = True, []
        elif isinstance(event, ContentDelta | RefusalDelta | ReasoningDelta):
            self._answer.append(event.text)
        elif isinstance(event, ClientToolCall):  # the client's calls come after their round finished
            if not self._reported:
                self._calls += [event.call.name, event.call.arguments]
        elif isinstance(event, RoundFinished):
            usage = event.usage
            reported = max(usage.total_tokens, usage.input_tokens + usage.output_tokens) if usage else 0
            if reported > 0:  # the upstream's count, and its answer's tokens for the next round's prompt
                self.spent += reported
                answered, self._answer = max(usage.output_tokens, 0) if usage else 0, []
            else:
                answered = self._answered()
                if self._open or event.ok:
                    self.spent += self.prompt + answered
            self.prompt += answered  # the next round reads this one's answer
            self._open, self._reported = False, reported > 0

    def close(self) -> int:
        """What was spent, a round cut off mid-answer (the client left) counted as far as it came."""
        if self._open:
            self.spent += self.prompt + self._answered()
            self._open = False
        if self._calls:
            self.spent += tokens.count_text("".join(self._calls), EXACT_OUTPUT_CHARS)
            self._calls = []
        return self.spent

    def _answered(self) -> int:
        text, self._answer = "".join(self._answer), []
        return tokens.count_text(text, EXACT_OUTPUT_CHARS) if text else 0
