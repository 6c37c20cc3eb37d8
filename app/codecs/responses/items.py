"""Responses API items <-> the engine's messages: input items in; output items and usage out.

Function calls and the reasoning before them become one assistant turn with tool calls, each output a tool
message, as a chat upstream expects. `developer` turns become `system`, which every OpenAI-compatible upstream
takes.
"""

from __future__ import annotations

import uuid
from typing import Any

from app.codecs.responses.protocol import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    MessageItem,
    ReasoningItem,
)
from app.core.model import JsonObject, Message, Part, ToolCall, Usage
from app.errors import GatewayError

TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}  # finish reasons, as Responses says


def item_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def messages_of(items: list[InputItem], instructions: str | None) -> list[Message]:
    """The conversation as the engine's messages, `instructions` first as a system message."""
    messages = [Message("system", instructions)] if instructions else []
    reasoning: str | None = None  # a reasoning item passed back belongs to the assistant turn after it
    for index, item in enumerate(items):
        if isinstance(item, ReasoningItem):
            reasoning = _reasoning_text(item) or reasoning
        elif isinstance(item, FunctionCallItem):
            call = ToolCall(item.call_id, item.name, item.arguments)
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant" and reasoning is None:
                last.tool_calls.append(call)
            else:
                messages.append(Message("assistant", None, [call], reasoning=reasoning))
                reasoning = None
        elif isinstance(item, FunctionCallOutputItem):
            messages.append(Message("tool", _output_text(item.output), tool_call_id=item.call_id))
        elif isinstance(item, MessageItem):
            role = "system" if item.role == "developer" else item.role
            content = _content(item.content, index, role == "assistant")
            messages.append(Message(role, content, reasoning=reasoning if role == "assistant" else None))
            if role == "assistant":
                reasoning = None
    return messages


def _reasoning_text(item: ReasoningItem) -> str | None:
    texts = [part.get("text") for part in item.content or () if part.get("type") == "reasoning_text"]
    texts = texts or [part.get("text") for part in item.summary if part.get("type") == "summary_text"]
    joined = "".join(text for text in texts if isinstance(text, str))
    return joined or None


def _output_text(output: str | list[dict[str, Any]]) -> str:
    if isinstance(output, str):
        return output
    return "".join(str(part.get("text") or "") for part in output if part.get("type") in TEXT_PARTS)


def _content(content: str | list[dict[str, Any]], index: int, assistant: bool) -> str | list[Part]:
    if isinstance(content, str):
        return content
    parts: list[Part] = []
    for number, part in enumerate(content):
        kind, where = part.get("type"), f"input[{index}].content[{number}]"
        if kind in TEXT_PARTS and isinstance(part.get("text"), str):
            parts.append(Part("text", text=part["text"]))
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            parts.append(Part("text", text=part["refusal"]))
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            image = {"url": part["image_url"], **({"detail": part["detail"]} if part.get("detail") else {})}
            parts.append(Part("image", url=part["image_url"], native={"type": "image_url", "image_url": image}))
        elif kind == "input_image":
            raise GatewayError(400, f"Invalid request: '{where}' needs an 'image_url' (file ids are not supported).",
                               param=f"{where}.image_url")  # fmt: skip
        else:
            raise GatewayError(
                400, f"Invalid request: '{where}' of type {kind!r} is not supported here "
                "(input_text, input_image with an image_url, output_text, refusal are).", param=where,
            )  # fmt: skip
    if assistant:  # an assistant turn goes upstream as plain text
        return "".join(part.text for part in parts)
    return parts


def reasoning_item(text: str, status: str = "completed", ident: str | None = None) -> JsonObject:
    return {
        "id": ident or item_id("rs"),
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}] if status == "completed" else [],
        "status": status,
    }


def message_item(text: str, status: str = "completed", ident: str | None = None) -> JsonObject:
    return {
        "id": ident or item_id("msg"),
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [output_text(text)] if status == "completed" else [],
    }


def output_text(text: str) -> JsonObject:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def function_call_item(call: ToolCall, status: str = "completed", ident: str | None = None) -> JsonObject:
    return {
        "id": ident or item_id("fc"),
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments if status == "completed" else "",
        "status": status,
    }


def usage_json(usage: Usage | None) -> JsonObject | None:
    if usage is None:
        return None
    prompt_details = usage.extra.get("prompt_tokens_details")
    completion_details = usage.extra.get("completion_tokens_details")
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": _count(prompt_details, "cached_tokens"), "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": _count(completion_details, "reasoning_tokens")},
        "total_tokens": usage.total_tokens or usage.prompt_tokens + usage.completion_tokens,
    }


def _count(details: Any, name: str) -> int:
    value = details.get(name) if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
