"""The round loop: call the upstream, run what it asks for server-side, repeat until there is an answer.

Each round sends the conversation with the currently loaded tools. `search_tools` is answered here and loads
tools for the next round; MCP tools run through their servers (one round's calls concurrently); a call to a
client tool ends the loop and goes back to the client, as OpenAI would send it. `run` serves plain requests;
the streaming module drives the same steps (`plan`, `run_tools`) round by round.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from app.discovery.search import shown_name
from app.engine.request_tools import RequestTools, ToolKind
from app.mcp.client.connections import McpManager
from app.mcp.client.results import truncate
from app.providers import Route

NOT_FORWARDED = frozenset({"model", "messages", "tools", "stream", "stream_options", "tool_set", "session_id"})
ASSISTANT_FIELDS_KEPT = ("reasoning_content", "reasoning", "reasoning_details")


@dataclass
class LoopStats:
    rounds: int = 0
    tools_called: list[str] = field(default_factory=list)
    mcp_errors: int = 0
    upstream_seconds: float = 0.0
    usage: dict[str, Any] | None = None
    round_limit_reached: bool = False
    tokens_saved: int = 0


class Step(Enum):
    """What a round's assistant message asks for next."""

    ANSWER = "answer"
    CLIENT_TOOLS = "client_tools"
    ROUND_LIMIT = "round_limit"
    RUN_TOOLS = "run_tools"


@dataclass
class Plan:
    step: Step
    calls: list[dict[str, Any]]
    kinds: list[ToolKind]


@dataclass
class ChatLoop:
    route: Route
    tools: RequestTools
    mcp: McpManager
    max_rounds: int
    stats: LoopStats = field(default_factory=LoopStats)

    async def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        base = self.upstream_base(payload)
        messages: list[dict[str, Any]] = list(payload["messages"])
        while True:
            response = await self._call_upstream(base, messages)
            choice = response["choices"][0]
            message = choice.get("message") or {}
            plan = self.plan(message)
            if plan.step is Step.ANSWER:
                return self._finish(response)
            if plan.step is Step.CLIENT_TOOLS:
                choice["message"] = {**message, "tool_calls": plan.calls}
                choice["finish_reason"] = "tool_calls"
                return self._finish(response)
            if plan.step is Step.ROUND_LIMIT:
                choice["message"] = {"role": "assistant", "content": self.round_limit_text(message.get("content"))}
                choice["finish_reason"] = "length"
                return self._finish(response)
            await self.run_tools(messages, message, plan)

    def upstream_base(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The request's own parameters over the model's defaults; gateway-only fields removed."""
        base = {**self.route.params, **{k: v for k, v in payload.items() if k not in NOT_FORWARDED}}
        base["model"] = self.route.model
        return base

    def plan(self, message: dict[str, Any]) -> Plan:
        calls = message.get("tool_calls") or []
        if not calls:
            return Plan(Step.ANSWER, [], [])
        kinds = [self.tools.kind(_call_name(call)) for call in calls]
        client_calls = [call for call, kind in zip(calls, kinds, strict=True) if kind is ToolKind.CLIENT]
        if client_calls:
            # Searches still run so a session remembers what was found; MCP calls beside a client call are left
            # for the model to repeat, since their results could not reach the client's history.
            for call, kind in zip(calls, kinds, strict=True):
                if kind is ToolKind.SEARCH:
                    self._run_search(call)
            return Plan(Step.CLIENT_TOOLS, client_calls, [ToolKind.CLIENT] * len(client_calls))
        if self.stats.rounds >= self.max_rounds:
            self.stats.round_limit_reached = True
            return Plan(Step.ROUND_LIMIT, calls, kinds)
        return Plan(Step.RUN_TOOLS, calls, kinds)

    async def run_tools(self, messages: list[dict[str, Any]], message: dict[str, Any], plan: Plan) -> None:
        """Answer every call of the round and extend the conversation for the next one."""
        messages.append(_assistant_turn(message, plan.calls))
        messages.extend(await self._run_calls(plan.calls, plan.kinds))

    def round_limit_text(self, content: str | None) -> str:
        marker = (
            f"[toolsift: stopped after {self.max_rounds} rounds, the round limit, while the model was still "
            "calling tools. Ask again to continue, or raise max_rounds in the gateway config.]"
        )
        return f"{content or ''}\n\n{marker}".strip()

    def _upstream_body(self, base: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
        self.stats.tokens_saved += self.tools.unsent_tokens()
        body = {**base, "messages": messages}
        definitions = self.tools.definitions()
        if definitions:
            body["tools"] = definitions
        return body

    async def _call_upstream(self, base: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            response = await self.route.provider.complete(self._upstream_body(base, messages))
        finally:
            self.stats.upstream_seconds += time.perf_counter() - started
            self.stats.rounds += 1
        self.stats.usage = add_usage(self.stats.usage, response.get("usage"))
        return response

    async def stream_round(self, base: dict[str, Any], messages: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """One streamed upstream call: chunks passed on as they come, usage counted on the way."""
        started = time.perf_counter()
        self.stats.rounds += 1
        try:
            async with aclosing(self.route.provider.stream(self._upstream_body(base, messages))) as chunks:
                async for chunk in chunks:
                    self.stats.usage = add_usage(self.stats.usage, chunk.get("usage"))
                    yield chunk
        finally:
            self.stats.upstream_seconds += time.perf_counter() - started

    async def _run_calls(self, calls: list[dict[str, Any]], kinds: list[ToolKind]) -> list[dict[str, Any]]:
        results: list[str | None] = [None] * len(calls)
        pending: dict[int, Any] = {}
        for index, (call, kind) in enumerate(zip(calls, kinds, strict=True)):
            if kind is ToolKind.SEARCH:
                await self.tools.prepare(parse_arguments(call)[0].get("query"))
                results[index] = self._run_search(call)
            elif kind is ToolKind.MCP:
                arguments, problem = parse_arguments(call)
                if problem:
                    results[index] = problem
                else:
                    pending[index] = self._run_mcp(_call_name(call), arguments)
            else:
                results[index] = self._refusal(_call_name(call), kind)
        for index, text in zip(pending, await asyncio.gather(*pending.values()), strict=True):
            results[index] = text
        limit = self.mcp.config.tool_result_max_chars  # every result the model gets, the gateway's own included
        return [
            {"role": "tool", "tool_call_id": call.get("id", ""), "content": truncate(text or "", limit)}
            for call, text in zip(calls, results, strict=True)
        ]

    def _run_search(self, call: dict[str, Any]) -> str:
        arguments, problem = parse_arguments(call)
        if problem:
            self.tools.search_calls += 1
            return problem
        return self.tools.search(arguments).text

    async def _run_mcp(self, name: str, arguments: dict[str, Any]) -> str:
        entry = self.tools.entries[name]
        assert entry.server is not None
        self.stats.tools_called.append(name)
        text, failed = await self.mcp.call_tool(entry.server, entry.original_name, arguments)
        self.stats.mcp_errors += failed
        return text

    def _refusal(self, name: str, kind: ToolKind) -> str:
        name = shown_name(name)  # a model's name is anything
        if kind is ToolKind.NOT_LOADED:
            return (
                f"Error: Tool '{name}' is not loaded yet, so it was not run. Call search_tools with "
                f'{{"tool_names": ["{name}"]}} first, then call it again.'
            )
        hint = " Use search_tools to find the right tool." if self.tools.discovery else ""
        loaded = ", ".join(self.tools.loaded_names) or "none"
        return f"Error: Unknown tool '{name}'. Loaded tools: {loaded}.{hint}"

    def _finish(self, response: dict[str, Any]) -> dict[str, Any]:
        if self.stats.usage is not None:
            response["usage"] = self.stats.usage
        response["tool_discovery"] = self.discovery_stats()
        return response

    def discovery_stats(self) -> dict[str, Any]:
        return {
            "rounds": self.stats.rounds,
            "search_calls": self.tools.search_calls,
            "tools_discovered": list(self.tools.found_by_search),
            "tools_prefetched": list(self.tools.prefetched),
            "tools_called": list(self.stats.tools_called),
            "deferred_tools": len(self.tools.deferred_names),
            "loaded_tools": self.tools.loaded_names,
            "round_limit_reached": self.stats.round_limit_reached,
        }


def _call_name(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    return str(function.get("name") or "")


def parse_arguments(call: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The call's arguments as an object, or the error text the model gets instead."""
    raw = (call.get("function") or {}).get("arguments") or "{}"
    name = _call_name(call)
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError) as exc:  # JSONDecodeError; integers or nesting beyond what Python parses
        where = f"{exc.msg} at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else "too deep or too long"
        return {}, f"Error: the arguments for '{name}' are not valid JSON ({where}). Call it again with a JSON object."
    if not isinstance(arguments, dict):
        return {}, f"Error: the arguments for '{name}' must be a JSON object, not {type(arguments).__name__}."
    return arguments, None


def _assistant_turn(message: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
    turn.update({key: message[key] for key in ASSISTANT_FIELDS_KEPT if message.get(key) is not None})
    return turn


def add_usage(total: dict[str, Any] | None, usage: Any) -> dict[str, Any] | None:
    """Sum usage objects field by field (nested details too); absent usage is never invented."""
    if not isinstance(usage, dict):
        return total
    if total is None:
        copied: dict[str, Any] = json.loads(json.dumps(usage))
        return copied
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float) and isinstance(total.get(key, 0), int | float):
            total[key] = total.get(key, 0) + value
        elif isinstance(value, dict):
            total[key] = add_usage(total.get(key) if isinstance(total.get(key), dict) else None, value)
    return total
