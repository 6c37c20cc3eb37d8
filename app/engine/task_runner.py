"""`run_task`: a whole task handed to the gateway (by an MCP client), run by the same loop as a chat request.

The task becomes a one-message conversation with the configured model over the caller's tools (deferred ones
found by search as usual); what comes back is the final answer and a compact record of what was done. Tools a
server annotates `destructiveHint: true` are refused unless the operator allowed them, and the model is told so.
Every failure (an unknown model, an upstream error, the deadline) is part of the report, never an exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from app.codecs.openai_chat.answers import finish_reason_of
from app.common.errors import GatewayError, RequestRefused
from app.config import RunTaskConfig
from app.core.catalog import ToolEntry
from app.core.model import ChatRequest, Message, Options, Usage
from app.engine.caller import Caller
from app.engine.events import CallRefused, ContentDelta, Event, Failed, Finished, McpCallFinished, SearchDone
from app.engine.loop import CallPolicy
from app.engine.record import RequestRecord
from app.mcp.client.connections import McpManager


class RunEntry(Protocol):
    """`Gateway.run`: the one entry a task goes through, as every chat request does."""

    def __call__(
        self, request: ChatRequest, caller: Caller, *, policy: CallPolicy | None = ..., max_rounds: int | None = ...
    ) -> AsyncGenerator[Event, None]: ...


DESTRUCTIVE = "its server marks it destructive (destructiveHint), and run_task does not run destructive tools here"


@dataclass
class TaskReport:
    answer: str
    finish_reason: str
    rounds: int
    usage: Usage | None
    calls: list[McpCallFinished] = field(default_factory=list)
    refused: list[CallRefused] = field(default_factory=list)
    searches: list[SearchDone] = field(default_factory=list)
    error: str | None = None

    def text(self) -> str:
        """The answer, then the record: what the calling model reads."""
        lines = [self.answer or "(no answer)", "", "---", f"rounds: {self.rounds}"]
        if self.usage is not None:
            lines.append(
                f"tokens: {self.usage.total_tokens} ({self.usage.input_tokens} in, {self.usage.output_tokens} out)"
            )
        for search in self.searches:
            lines.append(f"searched {search.label}: {', '.join(search.found) or 'nothing found'}")
        for call in self.calls:
            outcome = "ok" if call.ok else "failed"
            lines.append(
                f"called {call.name}: {outcome} in {call.seconds:.2f} s" + (f": {call.summary}" if call.summary else "")
            )
        for refusal in self.refused:
            lines.append(f"refused {refusal.name}: {refusal.reason}")
        if self.error:
            lines.append(f"error: {self.error}")
        return "\n".join(lines)

    def as_json(self) -> dict[str, object]:
        return {
            "answer": self.answer,
            "finish_reason": self.finish_reason,
            "rounds": self.rounds,
            "usage": None
            if self.usage is None
            else {
                "prompt_tokens": self.usage.input_tokens,
                "completion_tokens": self.usage.output_tokens,
                "total_tokens": self.usage.total_tokens,
            },
            "searches": [{"query": s.query, "queries": list(s.queries), "found": list(s.found)} for s in self.searches],
            "calls": [
                {"name": c.name, "ok": c.ok, "seconds": round(c.seconds, 3), "summary": c.summary} for c in self.calls
            ],
            "refused": [{"name": r.name, "reason": r.reason} for r in self.refused],
            "error": self.error,
        }


class TaskRunner:
    def __init__(self, settings: RunTaskConfig, run: RunEntry, mcp: McpManager) -> None:
        self.settings = settings
        self.mcp = mcp  # whose catalog a task's tool set is checked against
        self._run_request = run

    async def run(
        self,
        task: str,
        tool_set: str | None,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        caller: Caller | None = None,
    ) -> TaskReport:
        record = RequestRecord()
        answer: list[str] = []  # the answer's text, collected as it comes
        report = TaskReport("", "error", 0, None)
        try:
            async with asyncio.timeout(self.settings.deadline_seconds):
                await self._run(task, tool_set, caller or Caller(), record, answer, report, on_event)
        except TimeoutError:
            report.error = f"stopped at the run_task deadline of {self.settings.deadline_seconds:g} s"
        except (GatewayError, RequestRefused) as exc:
            report.error = exc.message
        report.answer = "".join(answer)
        report.rounds, report.usage = record.rounds, record.usage
        report.calls, report.searches = record.mcp_calls, record.searches
        return report

    async def _run(
        self,
        task: str,
        tool_set: str | None,
        caller: Caller,
        record: RequestRecord,
        answer: list[str],
        report: TaskReport,
        on_event: Callable[[Event], Awaitable[None]] | None,
    ) -> None:
        messages = [Message("user", task)]
        if self.settings.system_prompt:
            messages.insert(0, Message("system", self.settings.system_prompt))
        request = ChatRequest(self.settings.model, messages, [], Options(), tool_set=tool_set)
        # The task's own model, never a caller's upstream key: run_task is the gateway's, with its configured key.
        own = Caller(caller.identity, caller.request_id, admitted=caller.admitted)
        run = self._run_request(request, own, policy=self._policy, max_rounds=self.settings.max_rounds)
        async for event in record.observe(run):
            if isinstance(event, CallRefused):
                report.refused.append(event)
            elif isinstance(event, Finished):
                report.finish_reason = finish_reason_of(event.stop)
            elif isinstance(event, Failed):
                report.error = event.error.message
            elif isinstance(event, ContentDelta):
                answer.append(event.text)
            if on_event is not None:
                await on_event(event)

    def _policy(self, entry: ToolEntry) -> str | None:
        if entry.destructive and not self.settings.allow_destructive:
            return DESTRUCTIVE
        return None
