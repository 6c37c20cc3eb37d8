"""OpenAI chat completions <-> Anthropic Messages, both ways, plain and streamed. Pure functions, no I/O.

The client always speaks OpenAI; this module is the whole translation, so it is tested with golden files
alone: system messages become `system`, tool calls and results become `tool_use` / `tool_result` blocks
(consecutive results merged into one user turn, as Anthropic requires alternating roles), images are carried
over, and stop reasons, usage and streaming events map back onto OpenAI's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
DROPPED = frozenset(
    {"messages", "tools", "tool_choice", "parallel_tool_calls", "max_tokens", "max_completion_tokens", "stop", "n",
     "user", "stream_options", "frequency_penalty", "presence_penalty", "logprobs", "top_logprobs", "logit_bias",
     "response_format", "seed", "service_tier", "store", "modalities", "prediction", "audio", "reasoning_effort"}
)  # fmt: skip


def to_anthropic(body: dict[str, Any], default_max_tokens: int) -> dict[str, Any]:
    """An OpenAI chat-completions body as an Anthropic Messages body."""
    request: dict[str, Any] = {key: value for key, value in body.items() if key not in DROPPED}
    request["max_tokens"] = body.get("max_completion_tokens") or body.get("max_tokens") or default_max_tokens
    system, messages = _messages(body.get("messages") or [])
    if system:
        request["system"] = system
    request["messages"] = messages
    if body.get("tools"):
        request["tools"] = [
            {
                "name": tool["function"]["name"],
                "description": tool["function"].get("description") or "",
                "input_schema": tool["function"].get("parameters") or {"type": "object", "properties": {}},
            }
            for tool in body["tools"]
        ]
        choice = _tool_choice(body.get("tool_choice"), body.get("parallel_tool_calls"))
        if choice:
            request["tool_choice"] = choice
    stop = body.get("stop")
    if stop:
        request["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if body.get("user"):
        request["metadata"] = {"user_id": str(body["user"])}
    return request


def _tool_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    translated: dict[str, Any] | None
    if choice in (None, "auto"):
        translated = {"type": "auto"} if parallel is False else None
    elif choice == "none":
        translated = {"type": "none"}
    elif choice == "required":
        translated = {"type": "any"}
    elif isinstance(choice, dict) and choice.get("type") == "function":
        translated = {"type": "tool", "name": choice["function"]["name"]}
    else:
        translated = None
    if translated is not None and parallel is False and translated["type"] != "none":
        translated["disable_parallel_tool_use"] = True
    return translated


def _messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(message.get("content")))
            continue
        if role == "tool":
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": message.get("tool_call_id"),
                    "content": _text_of(message.get("content")),
                }
            ]
            _append(turns, "user", blocks)
        elif role == "assistant":
            _append(turns, "assistant", _assistant_blocks(message))
        else:
            _append(turns, "user", _user_blocks(message.get("content")))
    return "\n\n".join(part for part in system if part), turns


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Consecutive turns of one role become one (tool results then a user message, say)."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            blocks.append({"type": "image", "source": _image_source(url)})
    return blocks


def _image_source(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        header, data = url[len("data:") :].split(";base64,", 1)
        return {"type": "base64", "media_type": header or "image/png", "data": data}
    return {"type": "url", "url": url}


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = _text_of(message.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": arguments if isinstance(arguments, dict) else {},
            }
        )
    return blocks


def usage_to_openai(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    if not usage:
        return None
    cache_read = int(usage.get("cache_read_input_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + int(usage.get("cache_creation_input_tokens") or 0) + cache_read
    completion = int(usage.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cache_read},
    }


def from_anthropic(message: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages response as an OpenAI chat.completion."""
    text = "".join(block.get("text", "") for block in message.get("content") or [] if block.get("type") == "text")
    calls = [
        {
            "id": block.get("id"),
            "type": "function",
            "function": {"name": block.get("name"), "arguments": json.dumps(block.get("input") or {})},
        }
        for block in message.get("content") or []
        if block.get("type") == "tool_use"
    ]
    reply: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        reply["tool_calls"] = calls
    completion: dict[str, Any] = {
        "id": f"chatcmpl-{message.get('id', '')}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": message.get("model", ""),
        "choices": [
            {"index": 0, "message": reply, "finish_reason": STOP_REASONS.get(message.get("stop_reason") or "", "stop")}
        ],
    }
    usage = usage_to_openai(message.get("usage"))
    if usage:
        completion["usage"] = usage
    return completion


@dataclass
class StreamTranslator:
    """Anthropic stream events in, OpenAI chat-completion chunks out (usage as a final `choices: []` chunk)."""

    id: str = ""
    model: str = ""
    created: int = field(default_factory=lambda: int(time.time()))
    usage: dict[str, Any] = field(default_factory=dict)
    tool_index: dict[int, int] = field(default_factory=dict)  # Anthropic block index -> OpenAI tool-call index

    def chunks(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.id = f"chatcmpl-{message.get('id', '')}"
            self.model = message.get("model", "")
            self.usage.update(message.get("usage") or {})
            return [self._chunk({"role": "assistant", "content": ""})]
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") != "tool_use":
                return [self._chunk({"content": block["text"]})] if block.get("text") else []
            index = self.tool_index.setdefault(event.get("index", 0), len(self.tool_index))
            call = {"index": index, "id": block.get("id"), "type": "function",
                    "function": {"name": block.get("name"), "arguments": ""}}  # fmt: skip
            return [self._chunk({"tool_calls": [call]})]
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                return [self._chunk({"content": delta["text"]})]
            if (
                delta.get("type") == "input_json_delta"
                and delta.get("partial_json")
                and event.get("index") in self.tool_index
            ):
                call = {
                    "index": self.tool_index[event["index"]],
                    "function": {"arguments": delta.get("partial_json", "")},
                }
                return [self._chunk({"tool_calls": [call]})]
            return []
        if kind == "message_delta":
            self.usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            reason = (event.get("delta") or {}).get("stop_reason")
            return [self._chunk({}, STOP_REASONS.get(reason or "", "stop"))] if reason else []
        if kind == "message_stop":
            usage = usage_to_openai(self.usage)
            return [self._envelope(choices=[], usage=usage)] if usage else []
        return []  # ping, content_block_stop, and event types added later

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return self._envelope(choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason}])

    def _envelope(self, **fields: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **fields,
        }
