"""Scripted upstreams for bench/cache.py, one app for the three wire formats (chat completions, Anthropic Messages,
Responses), that act as a model would on a committed conversation script and refuse what the real APIs refuse.

The model reads its turn from the last user text and does that step's actions in order: a client tool is called
at once; an MCP tool is called directly when the request makes it callable (in `tools`, named by a
`tool_reference` to a deferred tool, or loaded by a `tool_search_output`), through `call_tool` when the
conversation's search results named it, and otherwise searched for (`search_tools`, or a client-executed
`tool_search`); a search that did not make it callable is a miss. Then it answers.

Refused as the APIs refuse them (a 400 in the format's error shape): a `tool_reference` to a tool that is not
sent deferred in `tools`; a `tool_search_output` or `function_call_output` without a matching call before it; a
chat `tool` message without a matching assistant call; two tools of one name. Plain JSON answers only: the
bench's clients never stream.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SEARCH = "search_tools"
CALL_TOOL = "call_tool"


class Refused(Exception):
    """A request the real API answers with a 400."""


@dataclass(frozen=True)
class Action:
    tool: str  # the exposed name: a client tool's, or the gateway's name of an MCP tool
    arguments: dict[str, Any]
    query: str = ""  # how the model searches for an MCP tool; empty for a client tool
    result: str = ""  # a client tool's result, which the bench's client sends back
    expect: str = ""  # what an MCP tool's result says (bench/cache_catalog.py's answers name their tool)


@dataclass(frozen=True)
class Step:
    user: str
    actions: tuple[Action, ...]
    answer: str


@dataclass
class Seen:
    """What one request shows the model."""

    tools: dict[str, bool] = field(default_factory=dict)  # function tools: name -> sent deferred
    search: str | None = None  # "function" or "tool_search"
    loaded: set[str] = field(default_factory=set)  # named by tool_reference / tool_search_output
    results: list[str] = field(default_factory=list)  # every tool result's text, for call_tool's names
    recent: list[str] = field(default_factory=list)  # the tool results' texts since the last user text
    user: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # since the last user text


@dataclass(frozen=True)
class Decision:
    kind: str  # "call", "search" or "answer"
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""


class Model:
    """The scripted model: every step of every script it was given, by its user text."""

    def __init__(self) -> None:
        self.steps: dict[str, Step] = {}
        self.misses: list[str] = []  # MCP tools a search did not make callable, or whose result did not come
        self.lock = threading.Lock()

    def learn(self, steps: list[Step]) -> None:
        self.steps.update({step.user: step for step in steps})

    def decide(self, seen: Seen) -> Decision:
        step = self.steps.get(seen.user)
        if step is None:
            return Decision("answer", text="(no script for this turn)")
        called = {name for name, _ in seen.calls} | {
            str(arguments.get("name")) for name, arguments in seen.calls if name == CALL_TOOL
        }
        queries = {json.dumps(arguments, sort_keys=True) for name, arguments in seen.calls if name == SEARCH}
        for action in step.actions:
            if action.tool in called:
                continue
            direct = seen.tools.get(action.tool)
            if (
                not action.query
                or direct is False
                or (direct and action.tool in seen.loaded)
                or (action.tool in seen.loaded and seen.search == "tool_search")
            ):
                return Decision("call", action.tool, action.arguments)
            if CALL_TOOL in seen.tools and any(action.tool in text for text in seen.results):
                return Decision("call", CALL_TOOL, {"name": action.tool, "arguments": action.arguments})
            if json.dumps({"query": action.query}, sort_keys=True) in queries or seen.search is None:
                with self.lock:
                    self.misses.append(action.tool)
                return Decision("answer", text=f"I could not find a tool for: {action.query}")
            return Decision("search", SEARCH, {"query": action.query})
        for action in step.actions:
            marker = action.expect or f"{action.tool.split('__', 1)[-1]}: done for"
            if action.query and not any(marker in text for text in seen.recent):
                with self.lock:
                    self.misses.append(f"{action.tool} (its result never came back)")
        return Decision("answer", text=step.answer)


# -- chat completions ---------------------------------------------------------------------------------------------


def read_chat(body: dict[str, Any]) -> Seen:
    seen = Seen()
    _tools(seen, [tool.get("function") or {} for tool in body.get("tools") or []], body.get("tools") or [])
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in body.get("messages") or []:
        role = message.get("role")
        if role == "user":
            seen.user, seen.calls, seen.recent = _text(message.get("content")), [], []
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                calls[call.get("id")] = (function.get("name"), _arguments(function.get("arguments")))
                seen.calls.append(calls[call.get("id")])
        elif role == "tool":
            if message.get("tool_call_id") not in calls:
                raise Refused(f"tool message without a matching tool call: {message.get('tool_call_id')!r}")
            _result(seen, message.get("content"))
    return seen


def chat_answer(decision: Decision, calls: itertools.count[int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": decision.text or None}
    if decision.kind != "answer":
        arguments = json.dumps(decision.arguments)
        call = {"id": f"call_{next(calls)}", "type": "function", "function": {"name": decision.name,
                                                                              "arguments": arguments}}  # fmt: skip
        message["tool_calls"] = [call]
    finish = "stop" if decision.kind == "answer" else "tool_calls"
    return {"id": "chatcmpl-cache", "object": "chat.completion", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}  # fmt: skip


# -- Anthropic Messages -------------------------------------------------------------------------------------------


def read_messages(body: dict[str, Any]) -> Seen:
    seen = Seen()
    tools = body.get("tools") or []
    _tools(seen, tools, tools)
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if message.get("role") == "assistant":
            for part in parts:
                if part.get("type") == "tool_use":
                    calls[part.get("id")] = (part.get("name"), part.get("input") or {})
                    seen.calls.append(calls[part.get("id")])
            continue
        results = [part for part in parts if part.get("type") == "tool_result"]
        if not results:
            seen.user, seen.calls, seen.recent = _text(parts), [], []
        for part in results:
            if part.get("tool_use_id") not in calls:
                raise Refused(f"tool_result without a matching tool_use: {part.get('tool_use_id')!r}")
            _result(seen, part.get("content"))
    return seen


def messages_answer(decision: Decision, calls: itertools.count[int]) -> dict[str, Any]:
    if decision.kind == "answer":
        content: list[dict[str, Any]] = [{"type": "text", "text": decision.text}]
    else:
        content = [{"type": "tool_use", "id": f"toolu_{next(calls)}", "name": decision.name,
                    "input": decision.arguments}]  # fmt: skip
    return {"id": "msg_cache", "type": "message", "role": "assistant", "model": "scripted", "content": content,
            "stop_reason": "end_turn" if decision.kind == "answer" else "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 10}}  # fmt: skip


# -- Responses ----------------------------------------------------------------------------------------------------


def read_responses(body: dict[str, Any]) -> Seen:
    seen = Seen()
    tools = body.get("tools") or []
    _tools(seen, tools, tools)
    if any(tool.get("type") == "tool_search" and tool.get("execution") == "client" for tool in tools):
        seen.search = "tool_search"
    items = body.get("input") or []
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    kinds: dict[str, str] = {}  # call id -> the kind of output that answers it
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            seen.user, seen.calls, seen.recent = _text(item.get("content")), [], []
        elif kind in ("function_call", "tool_search_call"):
            name = SEARCH if kind == "tool_search_call" else item.get("name")
            arguments = item.get("arguments")
            calls[item.get("call_id")] = (
                name,
                dict(arguments) if isinstance(arguments, dict) else _arguments(arguments),
            )
            kinds[item.get("call_id")] = kind.replace("_call", "_call_output").replace(
                "search_call_output", "search_output"
            )
            seen.calls.append(calls[item.get("call_id")])
        elif kind in ("function_call_output", "tool_search_output"):
            if kinds.get(item.get("call_id")) != kind:
                raise Refused(f"No tool call found for {kind} with call_id {item.get('call_id')!r}.")
            if kind == "tool_search_output":
                seen.loaded.update(_name(tool) for tool in item.get("tools") or [])
            _result(seen, item.get("output"))
    return seen


def responses_answer(decision: Decision, calls: itertools.count[int], search: str | None) -> dict[str, Any]:
    number = next(calls)
    if decision.kind == "answer":
        part = {"type": "output_text", "text": decision.text, "annotations": []}
        item: dict[str, Any] = {"id": f"msg_{number}", "type": "message", "status": "completed",
                                "role": "assistant", "content": [part]}  # fmt: skip
    elif decision.kind == "search" and search == "tool_search":
        item = {"id": f"tsc_{number}", "type": "tool_search_call", "call_id": f"call_{number}",
                "execution": "client", "status": "completed", "arguments": decision.arguments}  # fmt: skip
    else:
        item = {"id": f"fc_{number}", "type": "function_call", "status": "completed", "call_id": f"call_{number}",
                "name": decision.name, "arguments": json.dumps(decision.arguments)}  # fmt: skip
    return {"id": f"resp_{number}", "object": "response", "created_at": 1, "status": "completed", "error": None,
            "incomplete_details": None, "model": "scripted", "output": [item],
            "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}  # fmt: skip


# -- shared reading -----------------------------------------------------------------------------------------------


def _name(tool: dict[str, Any]) -> str:
    return str((tool.get("function") or {}).get("name") or tool.get("name") or "")


def _tools(seen: Seen, functions: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
    for function, tool in zip(functions, tools, strict=True):
        name = _name(function) or _name(tool)
        if not name:
            continue
        if name in seen.tools:
            raise Refused(f"tools: tool names must be unique: {name!r}")
        seen.tools[name] = bool(tool.get("defer_loading") or function.get("defer_loading"))
    if SEARCH in seen.tools:
        seen.search = "function"


def _arguments(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


def _result(seen: Seen, content: Any) -> None:
    """A tool result: its text for call_tool's names, and the deferred tools its references load."""
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "tool_reference":
            name = str(part.get("tool_name"))
            if not seen.tools.get(name):
                raise Refused(f"tool_reference to {name!r}, which is not a deferred tool in tools")
            seen.loaded.add(name)
    seen.results.append(content if isinstance(content, str) else _text(content))
    seen.recent.append(seen.results[-1])


# -- the app ------------------------------------------------------------------------------------------------------


class Upstreams:
    """The three scripted upstreams on one app; `requests` holds every body each format was sent, in order."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (provider type, body)
        self._calls = itertools.count(1)
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
        ])  # fmt: skip

    async def _body(self, request: Request, provider: str) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(await request.body())
        self.requests.append((provider, body))
        return body

    async def _chat(self, request: Request) -> JSONResponse:
        body = await self._body(request, "openai")
        try:
            seen = read_chat(body)
        except Refused as refused:
            return JSONResponse({"error": {"message": str(refused), "type": "invalid_request_error"}}, 400)
        return JSONResponse(chat_answer(self.model.decide(seen), self._calls))

    async def _messages(self, request: Request) -> JSONResponse:
        body = await self._body(request, "anthropic")
        try:
            seen = read_messages(body)
        except Refused as refused:
            error = {"type": "invalid_request_error", "message": str(refused)}
            return JSONResponse({"type": "error", "error": error}, 400)
        return JSONResponse(messages_answer(self.model.decide(seen), self._calls))

    async def _responses(self, request: Request) -> JSONResponse:
        body = await self._body(request, "openai_responses")
        try:
            seen = read_responses(body)
        except Refused as refused:
            error = {"message": str(refused), "type": "invalid_request_error", "param": "input", "code": None}
            return JSONResponse({"error": error}, 400)
        return JSONResponse(responses_answer(self.model.decide(seen), self._calls, seen.search))
