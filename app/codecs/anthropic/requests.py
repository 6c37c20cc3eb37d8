"""Anthropic Messages requests <-> the engine's model: a client's request in, a round's body out to an upstream.

In: every message keeps its wire dict (`native`), so an Anthropic upstream gets thinking blocks with their
signatures, `cache_control` and `tool_reference` blocks back exactly as sent, while another upstream gets the typed
fields. One user turn holding tool results becomes one engine `tool` message per result (each keeping its own
block), so the engine's loop reads them like any other. A `system` entry inside `messages` (Claude Code's
mid-conversation instructions) is a system message where it stands. A tool a `tool_reference` block names (a
client's own tool search loaded it) is loaded for the request, and an Anthropic upstream gets it as the client
sent it, `defer_loading` included, since that is what the reference expands.

Out: messages that arrived in Anthropic's format, and turns an Anthropic upstream answered (their blocks in
`extra`), are written back as they were, a client's mid-conversation `system` entries in their place; the rest
are written from their typed fields: system messages become `system`, tool calls and results `tool_use` /
`tool_result` blocks (consecutive turns of a role merged, as Anthropic requires), images carried over. Tools a
client sent in Anthropic's format go out as sent.
"""

from __future__ import annotations

import json

from app.codecs.anthropic.output_format import format_in, with_format
from app.codecs.anthropic.protocol import BETA_HEADER, SYSTEM_ROLES, MessagesRequest
from app.core.model import (
    ChatRequest,
    ChoiceMode,
    ClientTool,
    JsonObject,
    Message,
    Native,
    Options,
    Part,
    Reasoning,
    ToolCall,
    ToolChoice,
    ToolSpec,
    UpstreamRequest,
)

TYPED_FIELDS = frozenset({"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stop_sequences"})
TYPED_FIELDS |= {"temperature", "top_p", "stream", "tool_set", "session_id", "metadata"}
MODES: dict[str, ChoiceMode] = {"auto": "auto", "any": "required", "none": "none"}  # Anthropic's, the engine's
GATEWAY_TOOL_FIELDS = frozenset({"defer_loading"})  # a tool's fields the gateway acts on and never sends upstream


def chat_request(request: MessagesRequest, payload: JsonObject, beta: str | None = None) -> ChatRequest:
    """The validated request (`request`) and its raw body (`payload`), with its `anthropic-beta` header (`beta`),
    as the engine's request."""
    messages: list[Message] = []
    system = payload.get("system")
    if system:
        content: str | list[Part] = (
            system if isinstance(system, str) else [Part("text", text=block["text"]) for block in system]
        )
        messages.append(Message("system", content, native=Native("anthropic", {"content": system})))
    for raw in payload["messages"]:
        messages.extend(messages_from_wire(raw))
    tool_choice, parallel = _tool_choice_in(request.tool_choice)
    user = (request.metadata or {}).get("user_id")
    native = {key: value for key, value in payload.items() if key not in TYPED_FIELDS}
    if request.metadata is not None:
        native["metadata"] = request.metadata
    response_format = format_in(native)
    options = Options(
        max_tokens=request.max_tokens,
        temperature=payload.get("temperature"),
        top_p=payload.get("top_p"),
        stop=request.stop_sequences,  # an empty list too, as the client sent it
        reasoning=_reasoning_in(native),
        response_format=response_format,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        user=user if isinstance(user, str) and user else None,
        include_usage=True,  # Anthropic streams always end with usage; an OpenAI-compatible upstream must be asked
        params={"anthropic": native} if native else {},
        headers={"anthropic": {BETA_HEADER: beta}} if beta else {},
    )
    referenced = _referenced_tools(payload["messages"])
    tools = [
        ClientTool(
            ToolSpec(tool.name, tool.description or "", tool.input_schema, native=_native_tool(raw, referenced)),
            deferred=tool.defer_loading,
        )
        for tool, raw in zip(request.tools or (), payload.get("tools") or (), strict=True)
    ]
    return ChatRequest(
        model=request.model,
        messages=messages,
        tools=tools,
        options=options,
        stream=request.stream,
        tool_set=request.tool_set,
        session_id=request.session_id,
        loaded_tools=[tool.spec.name for tool in tools if tool.spec.name in referenced],
    )


def _native_tool(raw: JsonObject, referenced: set[str]) -> Native:
    """The tool as the client sent it, for an Anthropic upstream (`cache_control`, `strict`, `input_examples`,
    `eager_input_streaming`, ...), without what the gateway does itself: `defer_loading` is its deferral, unless a
    `tool_reference` in the conversation names the tool (the reference expands a deferred tool only)."""
    if raw.get("name") in referenced:
        return Native("anthropic", raw)
    return Native("anthropic", {key: value for key, value in raw.items() if key not in GATEWAY_TOOL_FIELDS})


def _referenced_tools(messages: list[JsonObject]) -> set[str]:
    """The tools `tool_reference` blocks of the conversation's tool results name: a client's own tool search
    loaded them (Claude Code's ToolSearch answers with them)."""
    names: set[str] = set()
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "tool_result":
                names.update(_references(block))
    return names


def _references(block: JsonObject) -> list[str]:
    """The tools a `tool_result` block's `tool_reference` parts load."""
    content = block.get("content")
    parts = content if isinstance(content, list) else ()
    return [
        str(part.get("tool_name")) for part in parts if isinstance(part, dict) and part.get("type") == "tool_reference"
    ]


def _tool_choice_in(choice: JsonObject | None) -> tuple[ToolChoice | None, bool | None]:
    """Anthropic's `tool_choice` as the engine's, and its `disable_parallel_tool_use`."""
    if choice is None:
        return None, None
    parallel = False if choice.get("disable_parallel_tool_use") is True else None
    kind = choice["type"]
    if kind == "tool":
        return ToolChoice("tool", choice["name"]), parallel
    return ToolChoice(MODES[kind]), parallel


def _reasoning_in(native: JsonObject) -> Reasoning | None:
    """Thinking with a token budget as the engine's reasoning, taken out of `native`; another shape of `thinking`
    stays there, for an Anthropic upstream alone."""
    thinking = native.get("thinking")
    if not (isinstance(thinking, dict) and thinking.keys() == {"type", "budget_tokens"}):
        return None
    budget = thinking["budget_tokens"]
    if thinking["type"] != "enabled" or not isinstance(budget, int) or isinstance(budget, bool):
        return None
    del native["thinking"]
    return Reasoning(budget_tokens=budget)


def messages_from_wire(raw: JsonObject) -> list[Message]:
    """One (validated) Anthropic message as engine messages: an assistant turn stays one message; a user turn
    becomes a `tool` message per `tool_result` block and a user message for the blocks around them."""
    content = raw["content"]
    if isinstance(content, str):
        return [Message(raw["role"], content, native=Native("anthropic", raw))]
    if raw["role"] == "system":
        return [Message("system", [_part(block) for block in content], native=Native("anthropic", raw))]
    if raw["role"] == "assistant":
        text = "".join(block["text"] for block in content if block["type"] == "text")
        thinking = "".join(block.get("thinking") or "" for block in content if block["type"] == "thinking")
        calls = [
            ToolCall(block["id"], block["name"], json.dumps(block.get("input") or {}))
            for block in content
            if block["type"] == "tool_use"
        ]
        return [Message("assistant", text or None, calls, reasoning=thinking or None, native=Native("anthropic", raw))]
    messages: list[Message] = []
    parts: list[Part] = []
    blocks: list[JsonObject] = []
    for block in content:
        if block["type"] == "tool_result":
            if blocks:
                messages.append(Message("user", parts, native=Native("anthropic", {"role": "user", "content": blocks})))
                parts, blocks = [], []
            native = Native("anthropic", {"role": "user", "content": [block]})
            loads = _references(block)
            messages.append(
                Message("tool", _result_text(block), tool_call_id=block["tool_use_id"], native=native, loads=loads)
            )
        else:
            parts.append(_part(block))
            blocks.append(block)
    if blocks:
        messages.append(Message("user", parts, native=Native("anthropic", {"role": "user", "content": blocks})))
    return messages


def _part(block: JsonObject) -> Part:
    if block["type"] == "text":
        return Part("text", text=block["text"])
    if block["type"] == "image":
        source = block["source"]
        if source.get("type") == "base64":
            return Part("image", url=f"data:{source.get('media_type')};base64,{source.get('data')}")
        if isinstance(source.get("url"), str):
            return Part("image", url=source["url"])
    return Part("other", native=block)


def _result_text(block: JsonObject) -> str:
    """A tool result as text; a `tool_reference` says which tool it loaded (another upstream gets the tool's
    definition in `tools`)."""
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(_result_part(part) for part in content if isinstance(part, dict))
    text = content or ""
    return f"Error: {text}" if block.get("is_error") is True else text


def _result_part(part: JsonObject) -> str:
    if part.get("type") == "tool_reference":
        return f"Tool {part.get('tool_name')} loaded: it can be called now."
    return str(part.get("text", ""))


def request_body(request: UpstreamRequest, default_max_tokens: int) -> JsonObject:
    """The round as an Anthropic Messages body."""
    options = request.options
    body: JsonObject = {"model": request.model}
    if request.stream:
        body["stream"] = True
    body["max_tokens"] = options.max_tokens or default_max_tokens
    for name in ("temperature", "top_p"):
        if getattr(options, name) is not None:
            body[name] = getattr(options, name)
    native = options.params.get("anthropic")
    deferred = {tool.name for tool in request.deferred}
    if native is not None or any(_blocks_of(message) is not None for message in request.messages):
        system, turns = _native_messages(request.messages, deferred)
    else:
        system, turns = _translated_messages(request.messages, deferred)
    if system:
        body["system"] = system
    body["messages"] = turns
    if request.tools or request.deferred:
        body["tools"] = [_tool(tool) for tool in request.tools]
        body["tools"] += [{**_tool(tool), "defer_loading": True} for tool in request.deferred]
        translated = tool_choice_out(options.tool_choice, options.parallel_tool_calls)
        if translated:
            body["tool_choice"] = translated
    if options.stop is not None:
        body["stop_sequences"] = [options.stop] if isinstance(options.stop, str) else list(options.stop)
    if options.user:
        body["metadata"] = {"user_id": options.user}
    if options.reasoning is not None and options.reasoning.budget_tokens is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": options.reasoning.budget_tokens}
    if native is not None:
        body.update(native)
    return with_format(body, options.response_format)


def _tool(tool: ToolSpec) -> JsonObject:
    if tool.native is not None and tool.native.format == "anthropic":
        return tool.native.value
    schema = tool.parameters or {"type": "object", "properties": {}}
    return {"name": tool.name, "description": tool.description or "", "input_schema": schema}


def tool_choice_out(choice: ToolChoice | None, parallel: bool | None) -> JsonObject | None:
    """The engine's tool choice and parallel-calls flag as Anthropic's `tool_choice` (None: Anthropic's default)."""
    translated: JsonObject | None
    if choice is None or choice.mode == "auto":
        translated = {"type": "auto"} if parallel is False else None
    elif choice.mode == "tool":
        translated = {"type": "tool", "name": choice.name}
    else:
        translated = {"type": {"none": "none", "required": "any"}[choice.mode]}
    if translated is not None and parallel is False and translated["type"] != "none":
        translated["disable_parallel_tool_use"] = True
    return translated


def _translated_messages(messages: list[Message], deferred: set[str]) -> tuple[str, list[JsonObject]]:
    """Messages from their typed fields; the system prompt as one string."""
    system: list[str] = []
    turns: list[JsonObject] = []
    for message in messages:
        if message.role in SYSTEM_ROLES:
            system.append(_text_of(message.content))
        else:
            _add_translated(turns, message, deferred)
    return "\n\n".join(part for part in system if part), turns


def _add_translated(turns: list[JsonObject], message: Message, deferred: set[str]) -> None:
    if message.role == "tool":
        block = {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": _result(message, deferred)}
        _join(turns, "user", [block])
    elif message.role == "assistant":
        _join(turns, "assistant", _assistant_blocks(message))
    else:
        _join(turns, "user", _user_blocks(message.content))


def _result(message: Message, deferred: set[str]) -> str | list[JsonObject]:
    """A tool result's content: its text, and a `tool_reference` for each deferred tool it loads (the API expands
    the tool's definition there)."""
    text = _text_of(message.content)
    references = [{"type": "tool_reference", "tool_name": name} for name in message.loads if name in deferred]
    return [*_text_blocks(text), *references] if references else text


def _native_messages(messages: list[Message], deferred: set[str]) -> tuple[str | list[JsonObject], list[JsonObject]]:
    """Messages written back from their Anthropic blocks where they have any, the rest translated; the system
    prompt as blocks unless every block is plain text. A client's own `system` entry after the conversation began
    stays where it is (Anthropic takes it with the beta the client sent); other system messages join `system`."""
    system: list[JsonObject] = []
    turns: list[JsonObject] = []
    for message in messages:
        blocks = _blocks_of(message)
        if message.role == "system" and turns and blocks is not None and _in_messages(message):
            _join(turns, "system", blocks)
        elif message.role in SYSTEM_ROLES:
            system.extend(blocks if blocks is not None else _text_blocks(message.text()))
        elif blocks is not None:
            role = "assistant" if message.role == "assistant" else "user"
            native = message.native.value.get("content") if message.native is not None else None
            _join(turns, role, native if isinstance(native, str) and message.extra is None else list(blocks))
        else:
            _add_translated(turns, message, deferred)
    if all(set(block) == {"type", "text"} for block in system):
        return "\n\n".join(block["text"] for block in system), turns
    return system, turns


def _in_messages(message: Message) -> bool:
    """A `system` entry an Anthropic client put inside `messages` (the top-level `system` has no `role` key)."""
    return message.native is not None and message.native.format == "anthropic" and "role" in message.native.value


def _join(turns: list[JsonObject], role: str, content: str | list[JsonObject]) -> None:
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


def _text_of(content: str | list[Part] | None) -> str:
    if isinstance(content, list):
        return "\n".join(part.text for part in content if part.kind == "text")
    return content or ""


def _user_blocks(content: str | list[Part] | None) -> list[JsonObject]:
    if not isinstance(content, list):
        return _text_blocks(content or "")
    blocks: list[JsonObject] = []
    for part in content:
        if part.kind == "text":
            blocks.append({"type": "text", "text": part.text})
        elif part.kind == "image":
            blocks.append({"type": "image", "source": _image_source(part.url)})
    return blocks


def _image_source(url: str) -> JsonObject:
    if url.startswith("data:") and ";base64," in url:
        header, data = url[len("data:") :].split(";base64,", 1)
        return {"type": "base64", "media_type": header or "image/png", "data": data}
    return {"type": "url", "url": url}


def _assistant_blocks(message: Message) -> list[JsonObject]:
    blocks: list[JsonObject] = []
    text = _text_of(message.content)
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.tool_calls:
        arguments = call.parsed
        arguments = arguments if isinstance(arguments, dict) else {}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks
