"""The `call_tool` deferral mode: found tools run through one fixed `call_tool` tool instead of joining `tools`.

Providers cache a prompt's prefix, and they render `tools` first: a tool added to `tools` at a discovery makes
everything after it (the system prompt, the whole history) uncached again. In this mode the tool list is fixed
for the whole conversation (the tools loaded from the start, `search_tools`, `call_tool`), a search answers with
the found tools' definitions in its text, and the model runs one with `call_tool {"name", "arguments"}`.

The gateway unwraps each `call_tool` call into a call of the named tool, so it runs exactly as a direct call
would (and a client tool goes back to the client under its own name); the other way, a client's history that
holds its plain calls of deferred tools is rendered upstream as the `call_tool` calls the model made, the same in
every request of the conversation, so the prefix stays the same and the conversation stays valid.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from app.core.catalog import ToolEntry
from app.core.model import JsonObject, Message, Native, ToolCall, ToolSpec

CALL_TOOL_NAME = "call_tool"
CALL_TOOL_CALLABLE_AFTER = (
    'then run one with call_tool, {"name": "<its exact name>", "arguments": {...}}: found tools are not added to '
    "your tool list"
)
FOUND_NOTE = (
    "Run these tools with call_tool: the exact name below and arguments that match its parameters, e.g. "
    '{"name": "<name>", "arguments": {...}}.'
)
CALL_TOOL_SPEC = ToolSpec(
    CALL_TOOL_NAME,
    "Run a tool that search_tools found. Search first: search_tools answers with each found tool's name, "
    "description and parameters. Then pass that tool's exact name in 'name' and its arguments, matching its "
    "parameters, as the object 'arguments'. Tools already in your tool list are called directly, not through this.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The found tool's exact name, as search_tools gave it."},
            "arguments": {"type": "object", "description": "The tool's arguments, as its parameters describe them."},
        },
        "required": ["name", "arguments"],
    },
)

Wrapped = Callable[[str], bool]  # whether calls of a tool go upstream as `call_tool` calls


def unwrap(call: ToolCall) -> tuple[ToolCall, str | None]:
    """A `call_tool` call as the call of the tool it names (same id, that tool's arguments as JSON), or the call
    itself and the error text the model reads instead."""
    outer = call.parsed
    if not isinstance(outer, dict):
        return call, (
            f"Error: the arguments for '{CALL_TOOL_NAME}' must be a JSON object: "
            '{"name": "<tool name>", "arguments": {...}}. Call it again.'
        )
    name, arguments = outer.get("name"), outer.get("arguments", {})
    if not isinstance(name, str) or not name:
        return call, (
            f"Error: {CALL_TOOL_NAME} needs 'name', the exact name of a tool search_tools found. Call search_tools "
            "first, then call_tool with that name."
        )
    if not isinstance(arguments, dict):
        return call, f"Error: 'arguments' of {CALL_TOOL_NAME} must be an object, not {type(arguments).__name__}."
    return ToolCall(call.id, name, json.dumps(arguments, ensure_ascii=False)), None


def definitions_text(entries: list[ToolEntry]) -> str:
    """Found tools' full definitions, as the model reads them in a search's result."""
    found = [
        {"name": entry.name, "description": entry.description, "parameters": entry.parameters} for entry in entries
    ]
    return json.dumps(found, ensure_ascii=False, separators=(",", ":"))


def wrapped_history(messages: list[Message], wrapped: Wrapped) -> list[Message]:
    """The conversation as the upstream saw it: assistant calls of deferred tools as `call_tool` calls, rendered
    the same way in every request (their native forms rewritten alike, so a format that sends them as received
    agrees)."""
    return [_wrapped(message, wrapped) if _has_wrapped(message, wrapped) else message for message in messages]


def _has_wrapped(message: Message, wrapped: Wrapped) -> bool:
    return message.role == "assistant" and any(wrapped(call.name) for call in message.tool_calls)


def _wrapped(message: Message, wrapped: Wrapped) -> Message:
    calls = [_wrapped_call(call) if wrapped(call.name) else call for call in message.tool_calls]
    return replace(
        message, tool_calls=calls, native=_native(message.native, wrapped), extra=_native(message.extra, wrapped)
    )


def _wrapped_call(call: ToolCall) -> ToolCall:
    arguments: Any = call.parsed
    if arguments is None:  # not JSON: the text as the model wrote it
        arguments = call.arguments
    return ToolCall(
        call.id, CALL_TOOL_NAME, json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    )


def _native(native: Native | None, wrapped: Wrapped) -> Native | None:
    """An Anthropic message's blocks with their `tool_use` blocks rewritten (its thinking blocks and their
    signatures kept); a chat message as received is dropped, to be rendered from the typed calls."""
    if native is None:
        return None
    if native.format == "openai" and native.value.get("tool_calls"):
        return None
    content = native.value.get("content")
    if native.format != "anthropic" or not isinstance(content, list):
        return native
    blocks: list[Any] = [_block(block, wrapped) for block in content]
    return Native(native.format, {**native.value, "content": blocks})


def _block(block: Any, wrapped: Wrapped) -> Any:
    if not isinstance(block, dict) or block.get("type") != "tool_use" or not wrapped(str(block.get("name"))):
        return block
    arguments: JsonObject = {"name": block.get("name"), "arguments": block.get("input", {})}
    return {**block, "name": CALL_TOOL_NAME, "input": arguments}
