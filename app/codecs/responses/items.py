"""Responses API items <-> the engine's messages: input items in; output items and usage out.

Calls (of functions and of the other tools a client runs, `app.codecs.responses.tools`) and the reasoning before
them become one assistant turn with tool calls, each output a tool message, as a chat upstream expects.
`developer` turns become `system`, which every OpenAI-compatible upstream takes. What an upstream gave of its own
about a turn's reasoning (an OpenAI-compatible upstream's `reasoning_details`) reaches the client sealed in a
reasoning item's `encrypted_content`, and goes back upstream with the turn when the client passes the item back.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from typing import Any

from app.codecs.responses.compaction import compaction_message
from app.codecs.responses.input import OUTPUT_PARTS, OWN_ITEMS
from app.codecs.responses.protocol import (
    CompactionItem,
    CustomToolCallItem,
    CustomToolCallOutputItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    HostedCallItem,
    InputItem,
    LocalShellCallItem,
    LocalShellCallOutputItem,
    MessageItem,
    ReasoningItem,
    ToolSearchCallItem,
    ToolSearchOutputItem,
)
from app.codecs.responses.tools import (
    LOCAL_SHELL,
    TOOL_SEARCH,
    action_arguments,
    call_item,
    custom_arguments,
    flat_name,
)
from app.common.errors import GatewayError
from app.core.model import JsonObject, Message, Native, Part, StopKind, StopReason, ToolCall, Usage

TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
# The stop kinds a response is `incomplete` for, with Responses' reason; a reason not here reads as `max_tokens`.
INCOMPLETE: dict[StopKind, str] = {"max_tokens": "max_output_tokens", "refused": "content_filter"}
STOP_KINDS: dict[str, StopKind] = {reason: kind for kind, reason in INCOMPLETE.items()}
SEALED = "toolsift.v1."  # what starts an `encrypted_content` the gateway made
SEALED_FIELDS = ("reasoning_details",)  # an OpenAI-compatible upstream's own reasoning fields, sent back next turn
CallItem = FunctionCallItem | CustomToolCallItem | LocalShellCallItem | ToolSearchCallItem
OutputItem = FunctionCallOutputItem | CustomToolCallOutputItem | LocalShellCallOutputItem


def item_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def messages_of(items: list[InputItem], instructions: str | None) -> list[Message]:
    """The conversation as the engine's messages, `instructions` first as a system message. Item references and
    added tools are the front's (it resolves the one and loads the other) and are skipped here."""
    messages = [Message("system", instructions)] if instructions else []
    reasoning: str | None = None  # a reasoning item passed back belongs to the assistant turn after it
    carried: Native | None = None  # and what the upstream gave of its own with it
    for index, item in enumerate(items):
        last = messages[-1] if messages else None
        if isinstance(item, ReasoningItem | HostedCallItem):
            if isinstance(item, ReasoningItem):
                reasoning = _reasoning_text(item) or reasoning
            own = _carried(item)
            if own is not None and own.format == "openai" and _open_turn(last):
                assert last is not None
                last.extra = own  # streamed, the gateway's sealed item comes after the turn's text, before its calls
            elif own is not None:
                carried = _joined(carried, own)
        elif isinstance(item, CallItem):
            call = _call(item)
            if last is not None and last.role == "assistant" and reasoning is None and carried is None:
                last.tool_calls.append(call)
            else:
                messages.append(Message("assistant", None, [call], reasoning=reasoning, extra=carried))
                reasoning = carried = None
        elif isinstance(item, OutputItem):
            call_id = item.call_id or (item.id if isinstance(item, LocalShellCallOutputItem) else None) or ""
            messages.append(Message("tool", _output_text(item.output), tool_call_id=call_id))
        elif isinstance(item, ToolSearchOutputItem):
            if item.call_id:  # the tools it loaded, as they came, for an upstream that reads them there
                native = Native("responses", item.model_dump(exclude_none=True))
                messages.append(Message("tool", _loaded_text(item), tool_call_id=item.call_id, native=native))
        elif isinstance(item, CompactionItem):
            messages.append(compaction_message(item.model_dump(exclude_none=True), f"input[{index}]"))
        elif isinstance(item, MessageItem):
            role = "system" if item.role == "developer" else item.role
            content = _content(item.content, index, role == "assistant")
            assistant = role == "assistant"
            parts = _output_parts(item.content) if assistant else None
            messages.append(Message(role, content, reasoning=reasoning if assistant else None,
                                    extra=carried if assistant else None, native=parts))  # fmt: skip
            if assistant:
                reasoning = carried = None
    return messages


def _output_parts(content: str | list[dict[str, Any]]) -> Native | None:
    """An assistant turn's parts as they came (annotations, logprobs, a refusal), for a Responses upstream; output
    text has its `annotations`, which the upstream requires."""
    if isinstance(content, str):
        return None
    parts = [{"annotations": [], **part} if part.get("type") == "output_text" else part for part in content]
    return Native("responses", {"content": parts})


def _open_turn(message: Message | None) -> bool:
    return message is not None and message.role == "assistant" and message.extra is None


def _joined(carried: Native | None, own: Native) -> Native:
    """A turn's own items so far with one more: a Responses upstream's in order (reasoning, hosted calls)."""
    if carried is None or carried.format != "responses" or own.format != "responses":
        return own
    return Native("responses", {OWN_ITEMS: [*carried.value[OWN_ITEMS], *own.value[OWN_ITEMS]]})


def _call(item: CallItem) -> ToolCall:
    if isinstance(item, FunctionCallItem):
        name = flat_name(item.namespace, item.name) if item.namespace else item.name
        return ToolCall(item.call_id, name, item.arguments)
    if isinstance(item, CustomToolCallItem):
        name = flat_name(item.namespace, item.name) if item.namespace else item.name
        return ToolCall(item.call_id, name, custom_arguments(item.input))
    if isinstance(item, LocalShellCallItem):
        return ToolCall(item.call, LOCAL_SHELL, action_arguments(item.action))
    arguments = item.arguments if isinstance(item.arguments, dict) else {"query": str(item.arguments or "")}
    return ToolCall(item.call_id or item.id or "", TOOL_SEARCH, json.dumps(arguments, ensure_ascii=False))


def _loaded_text(item: ToolSearchOutputItem) -> str:
    """What a tool search loaded, as the model calls it (a namespace's functions by their flat names)."""
    names: list[str] = []
    for tool in item.tools:
        name = str(tool.get("name") or tool.get("type"))
        inner = tool.get("tools") if tool.get("type") == "namespace" else None
        if isinstance(inner, list):
            names += [flat_name(name, str(each.get("name"))) for each in inner if isinstance(each, dict)]
        else:
            names.append(name)
    return f"Tools loaded, callable now: {', '.join(names)}." if names else "No tools found."


def seal(extra: Native | None) -> str | None:
    """An upstream's own reasoning fields of a turn as an opaque `encrypted_content`, or None when it gave none."""
    if extra is None or extra.format != "openai":
        return None
    own = {key: extra.value[key] for key in SEALED_FIELDS if extra.value.get(key)}
    if not own:
        return None
    text = json.dumps({"format": extra.format, "value": own}, ensure_ascii=False, separators=(",", ":"))
    return SEALED + base64.urlsafe_b64encode(text.encode()).decode()


def _carried(item: ReasoningItem | HostedCallItem) -> Native | None:
    """What an item passed back carries for the upstream: the fields the gateway sealed in a reasoning item, or a
    Responses upstream's own item (reasoning with its `encrypted_content`, a hosted call), for an upstream of that
    format."""
    if isinstance(item, HostedCallItem):
        return Native("responses", {OWN_ITEMS: [item.model_dump(exclude_none=True)]})
    sealed = item.encrypted_content
    if not sealed:
        return None
    if not sealed.startswith(SEALED):
        return Native("responses", {OWN_ITEMS: [item.model_dump(exclude_none=True)]})
    try:
        found = json.loads(base64.urlsafe_b64decode(sealed[len(SEALED) :].encode()))
    except (ValueError, binascii.Error, RecursionError):
        return None
    if not isinstance(found, dict) or found.get("format") != "openai" or not isinstance(found.get("value"), dict):
        return None
    return Native("openai", {key: found["value"][key] for key in SEALED_FIELDS if key in found["value"]})


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


def reasoning_item(
    text: str, status: str = "completed", ident: str | None = None, encrypted: str | None = None
) -> JsonObject:
    item: JsonObject = {
        "id": ident or item_id("rs"),
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}] if status == "completed" and text else [],
        "status": status,
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def message_item(text: str, status: str = "completed", ident: str | None = None) -> JsonObject:
    return {
        "id": ident or item_id("msg"),
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [output_text(text)] if status == "completed" else [],
    }


def upstream_parts(extra: Native | None, text: str) -> list[JsonObject] | None:
    """A Responses upstream's message parts of a turn (`extra`), when they say all of `text` (its annotations and
    logprobs kept); None when the text is more than theirs (earlier rounds', the gateway's own)."""
    parts = extra.value.get(OUTPUT_PARTS) if extra is not None and extra.format == "responses" else None
    if not isinstance(parts, list) or "".join(str(p.get("text") or p.get("refusal") or "") for p in parts) != text:
        return None
    return parts


def output_text(text: str) -> JsonObject:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def function_call_item(call: ToolCall, status: str = "completed", ident: str | None = None) -> JsonObject:
    return call_item(call, None, ident or item_id("fc"), status)


def incomplete_reason(stop: StopReason | None) -> str | None:
    """Why a response is incomplete (a Responses upstream's own reason as it came), or None: it is not."""
    if stop is None:
        return None
    return stop.said_in("responses") or INCOMPLETE.get(stop.kind)


def usage_json(usage: Usage | None) -> JsonObject | None:
    """Usage in Responses' terms: the typed counts in their details objects, beside what a Responses upstream said
    more."""
    if usage is None:
        return None
    extra = usage.extra_in("responses")
    cache = {"cached_tokens": usage.cache_read_tokens or 0, "cache_write_tokens": usage.cache_write_tokens or 0}
    return {
        **extra,
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {**cache, **_details(extra, "input_tokens_details")},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens or 0,
            **_details(extra, "output_tokens_details"),
        },
        "total_tokens": usage.total_tokens or usage.input_tokens + usage.output_tokens,
    }


def _details(extra: JsonObject, name: str) -> JsonObject:
    details = extra.get(name)
    return details if isinstance(details, dict) else {}
