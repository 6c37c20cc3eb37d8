"""Prompt-cache breakpoints for an Anthropic body whose client set none (`prompt_cache: "auto"`).

Anthropic caches a prompt prefix only up to a block marked `cache_control`, and renders tools, then the system
prompt, then the messages. So the gateway marks the last tool, the last system block and the last block of the
last message: the tools and system prompt are read back on every later call, and the conversation so far on the
next one. A client that set any breakpoint of its own (on a tool, the system prompt, a message, or the body's own
`cache_control`) placed them as it meant to: its body goes up as it is. Three at most, within Anthropic's four.
Marked blocks are copies; the request's own (shared, cached wire forms) stay untouched.
"""

from __future__ import annotations

from typing import Any

from app.core.model import JsonObject

EPHEMERAL: JsonObject = {"type": "ephemeral"}
UNMARKABLE = frozenset({"thinking", "redacted_thinking"})  # Anthropic refuses cache_control on thinking blocks


def with_breakpoints(body: JsonObject) -> JsonObject:
    """`body` with the gateway's breakpoints, or as it is when the client set its own."""
    system, messages, tools = body.get("system"), body.get("messages") or [], body.get("tools") or []
    if client_set(body):
        return body
    placed = dict(body)
    if tools:
        placed["tools"] = _marked_last(tools, lambda tool: not tool.get("defer_loading"))
    if isinstance(system, str) and system:
        placed["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    elif isinstance(system, list) and system:
        placed["system"] = _marked_last(system, _markable)
    if messages:
        last = messages[-1]
        content = last.get("content")
        if isinstance(content, str) and content:
            content = [{"type": "text", "text": content, "cache_control": EPHEMERAL}]
        elif isinstance(content, list):
            content = _marked_last(content, _markable)
        placed["messages"] = [*messages[:-1], {**last, "content": content}]
    return placed


def client_set(body: JsonObject) -> bool:
    """Whether any breakpoint is already in the body: the client's, left alone."""
    if "cache_control" in body:
        return True
    system = body.get("system")
    blocks: list[Any] = [*(body.get("tools") or []), *(system if isinstance(system, list) else [])]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            blocks.extend(content)
    return any(isinstance(block, dict) and "cache_control" in block for block in blocks)


def _markable(block: JsonObject) -> bool:
    kind = block.get("type")
    return kind not in UNMARKABLE and not (kind == "text" and not block.get("text"))


def _marked_last(items: list[JsonObject], markable: Any) -> list[JsonObject]:
    """A copy of `items` with the last markable one marked (a copy of it); unchanged when none is."""
    for index in range(len(items) - 1, -1, -1):
        if isinstance(items[index], dict) and markable(items[index]):
            return [*items[:index], {**items[index], "cache_control": EPHEMERAL}, *items[index + 1 :]]
    return items
