"""Anthropic-native content on the way to and from an Anthropic upstream, beside the golden-tested translation.

Messages that arrived in Anthropic's own format (the Messages front keeps each one's blocks in `native`) and turns
an Anthropic upstream answered (their blocks in `extra`) are written back exactly as they were: thinking blocks
with their signatures, `cache_control`, `tool_reference` and every block type added later. Everything else is
translated through the chat-completions form as before; so are tools, except those a client sent in Anthropic's
format, which go out as sent (`cache_control`, `strict`, ...). From answers, thinking becomes reasoning for every
front, each thinking block also goes on whole as it ends (`reasoning_blocks`: a Messages client gets it signed), and
the whole content goes into `extra`, so the next round sends it back unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.core.model import Delta, JsonObject, Message, Native, ToolSpec, UpstreamRequest
from app.providers.anthropic_format import _messages
from app.providers.openai_format import message_to_openai

SYSTEM_ROLES = ("system", "developer")
THINKING = ("thinking", "redacted_thinking")


def carries_native(request: UpstreamRequest) -> bool:
    native = request.options.native is not None and request.options.native.format == "anthropic"
    return native or any(_blocks_of(message) is not None for message in request.messages)


def with_native(body: JsonObject, request: UpstreamRequest) -> JsonObject:
    """`body` (the translated request) with its system prompt and messages written from the native blocks where
    there are any, and the request's Anthropic-only parameters (`thinking`, `top_k`, ...) added."""
    body = _with_native_tools(body, request)
    if not carries_native(request):
        return body
    system: list[JsonObject] = []
    turns: list[dict[str, Any]] = []
    for message in request.messages:
        blocks = _blocks_of(message)
        if message.role in SYSTEM_ROLES:
            system.extend(blocks if blocks is not None else _text_blocks(message.text()))
        elif blocks is not None:
            role = "assistant" if message.role == "assistant" else "user"
            native = message.native.value.get("content") if message.native is not None else None
            _join(turns, role, native if isinstance(native, str) and message.extra is None else list(blocks))
        else:
            _, translated = _messages([message_to_openai(message)])
            for turn in translated:
                _join(turns, turn["role"], list(turn["content"]))
    body = {key: value for key, value in body.items() if key != "system"}
    if system:
        plain = all(set(block) == {"type", "text"} for block in system)
        body["system"] = "\n\n".join(block["text"] for block in system) if plain else system
    body["messages"] = turns
    native = request.options.native
    if native is not None and native.format == "anthropic":
        body.update(native.value)
    return body


def _with_native_tools(body: JsonObject, request: UpstreamRequest) -> JsonObject:
    """Each tool a client sent in Anthropic's format as sent, in place of its translation and in the same place,
    so a `cache_control` breakpoint stays on the tool that carried it."""
    natives = [_native_tool(spec) for spec in request.tools]
    if not any(natives):
        return body
    return {**body, "tools": [native or tool for native, tool in zip(natives, body["tools"], strict=True)]}


def _native_tool(spec: ToolSpec) -> JsonObject | None:
    return spec.native.value if spec.native is not None and spec.native.format == "anthropic" else None


def _join(turns: list[dict[str, Any]], role: str, content: str | list[JsonObject]) -> None:
    """Consecutive turns of one role become one, as Anthropic requires; a lone string content stays a string."""
    if not content:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"] = [*_as_blocks(turns[-1]["content"]), *_as_blocks(content)]
    else:
        turns.append({"role": role, "content": content})


def _as_blocks(content: str | list[JsonObject]) -> list[JsonObject]:
    return _text_blocks(content) if isinstance(content, str) else content


def _blocks_of(message: Message) -> list[JsonObject] | None:
    """The message's Anthropic blocks: an answer's content (`extra`), or the message as the front received it."""
    if message.extra is not None and message.extra.format == "anthropic" and "content" in message.extra.value:
        return list(message.extra.value["content"])
    if message.native is None or message.native.format != "anthropic":
        return None
    content = message.native.value.get("content")
    if isinstance(content, str):
        return _text_blocks(content)
    return [block for block in content or () if not _unsigned(block)]


def _unsigned(block: JsonObject) -> bool:
    """A thinking block without a signature (reasoning of another upstream, as the gateway rendered it, or a
    stream's earlier round): Anthropic refuses it, and it was never Anthropic's to verify."""
    return block.get("type") == "thinking" and not block.get("signature")


def _text_blocks(text: str) -> list[JsonObject]:
    return [{"type": "text", "text": text}] if text else []


def with_thinking(delta: Delta, message: JsonObject) -> Delta:
    """A whole answer's delta with its thinking as reasoning and its content blocks as `extra`."""
    content = message.get("content") or []
    thinking = "".join(block.get("thinking") or "" for block in content if block.get("type") == "thinking")
    if thinking:
        delta.reasoning = thinking
    delta.extra = Native("anthropic", {"content": content})
    delta.reasoning_blocks = [Native("anthropic", block) for block in content if block.get("type") in THINKING]
    return delta


@dataclass
class BlockCollector:
    """A streamed answer's content blocks, assembled from its events as Anthropic would have sent them whole."""

    blocks: dict[int, JsonObject] = field(default_factory=dict)
    inputs: dict[int, str] = field(default_factory=dict)  # tool_use input JSON, in parts

    def delta(self, event: JsonObject) -> Delta | None:
        """What the event adds beyond the translated chunks: thinking text, and at the end the blocks."""
        kind, index = event.get("type"), event.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            self.blocks[index] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta" and index in self.blocks:
            return self._add(self.blocks[index], index, event.get("delta") or {})
        elif kind == "content_block_stop" and index in self.inputs:
            try:
                value = json.loads(self.inputs.pop(index) or "{}")
            except ValueError:
                value = {}
            self.blocks[index]["input"] = value if isinstance(value, dict) else {}
        elif kind == "content_block_stop" and isinstance(index, int) and index in self.blocks:
            block = self.blocks[index]
            return Delta(reasoning_blocks=[Native("anthropic", block)]) if block.get("type") in THINKING else None
        elif kind == "message_stop":
            return Delta(extra=Native("anthropic", {"content": [self.blocks[i] for i in sorted(self.blocks)]}))
        return None

    def _add(self, block: JsonObject, index: int, delta: JsonObject) -> Delta | None:
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
        elif kind == "thinking_delta":
            text = str(delta.get("thinking") or "")
            block["thinking"] = str(block.get("thinking") or "") + text
            return Delta(reasoning=text) if text else None
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "input_json_delta":
            self.inputs[index] = self.inputs.get(index, "") + str(delta.get("partial_json") or "")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        return None
