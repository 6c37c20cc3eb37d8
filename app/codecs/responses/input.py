"""The engine's conversation and tools as a Responses request's `input` and `tools`, for an upstream that speaks
the Responses API.

Nothing is stored upstream (`store: false`), so every item goes with its content and without an id, as Codex CLI
sends its history: an id would name an item the upstream never kept. A call goes back as the item of its tool's
type (`custom_tool_call`, `local_shell_call`, `tool_search_call`, `function_call` with its `namespace`) and its
output as the matching output item; the upstream's own items of a turn (reasoning with its `encrypted_content`,
hosted calls such as `web_search_call`), kept in the turn's `extra`, go before it. Reasoning the upstream cannot
read back (text without `encrypted_content`) is left out. Tools go as the client sent them, a namespace's
functions regrouped under it; the gateway's own and other formats' tools as functions.
"""

from __future__ import annotations

from app.codecs.responses.tools import TOOL_SEARCH, custom_input, flat_name, search_arguments, shell_action
from app.core.model import JsonObject, Message, Part, ToolCall, ToolSpec

OWN_ITEMS = "items"  # the key of a turn's own Responses items in its `extra` (format `responses`)
OUTPUT_PARTS = "parts"  # and of its messages' content parts, as the upstream gave them
STATELESS = frozenset({"id"})  # what only a stored item means: the upstream refuses ids it never kept


def input_items(
    messages: list[Message], tools: list[ToolSpec], deferred: list[ToolSpec] | None = None
) -> list[JsonObject]:
    """The conversation as input items; `tools` tell which type each call is (a custom tool's, a shell's, ...);
    `deferred` are the tools the gateway's tool search outputs load (the `native` deferral)."""
    specs = {tool.name: tool for tool in tools}
    searches = [tool for tool in tools if tool.kind == "tool_search"]
    if searches:  # the upstream names a `tool_search` call by the tool's type: the request has one such tool
        specs.setdefault(TOOL_SEARCH, searches[0])
    loadable = {tool.name: tool for tool in deferred or ()}
    calls: dict[str, ToolSpec | None] = {}  # call id -> the tool called, for its output's type
    items: list[JsonObject] = []
    for message in messages:
        if message.role == "tool":
            items += _outputs(message, calls.get(message.tool_call_id or ""), loadable)
        elif message.role == "assistant":
            items += own_items(message)
            if message.text():
                items.append({"type": "message", "role": "assistant", "content": _assistant_content(message)})
            for call in message.tool_calls:
                spec = calls[call.id] = specs.get(call.name)
                items.append(_call(call, spec))
        elif _compaction(message) is not None:
            items.append(_compaction(message) or {})
        else:
            role = message.role if message.role in ("system", "developer") else "user"
            items.append({"type": "message", "role": role, "content": _content(message.content)})
    return items


def _assistant_content(message: Message) -> list[JsonObject]:
    """An assistant turn's output parts: a Responses client's as they came (annotations, logprobs, a refusal), the
    others' as one text."""
    native = message.native.value.get("content") if message.native and message.native.format == "responses" else None
    return native if isinstance(native, list) else [{"type": "output_text", "text": message.text(), "annotations": []}]


def _compaction(message: Message) -> JsonObject | None:
    """A compaction item the client passed back (its `native`), without its id, for a Responses upstream."""
    native = message.native
    if native is None or native.format != "responses" or native.value.get("type") != "compaction":
        return None
    return {key: value for key, value in native.value.items() if key not in STATELESS}


def own_items(message: Message) -> list[JsonObject]:
    """The upstream's own items of an assistant turn, without what only a stored item means; reasoning without
    `encrypted_content` cannot be read back without the store, and is left out."""
    extra = message.extra
    if extra is None or extra.format != "responses":
        return []
    items: list[JsonObject] = []
    for item in extra.value.get(OWN_ITEMS) or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "reasoning":
            if not item.get("encrypted_content"):
                continue
            item = {key: value for key, value in item.items() if key != "content"}  # the summary carries it
        items.append({key: value for key, value in item.items() if key not in STATELESS})
    return items


def _call(call: ToolCall, spec: ToolSpec | None) -> JsonObject:
    kind = spec.kind if spec is not None else "function"
    item: JsonObject
    if kind == "custom":
        item = {"type": "custom_tool_call", "call_id": call.id, "name": own_name(call.name, spec),
                "input": custom_input(call.arguments)}  # fmt: skip
    elif kind == "local_shell":
        return {"type": "local_shell_call", "call_id": call.id, "action": shell_action(call.arguments),
                "status": "completed"}  # fmt: skip
    elif kind == "tool_search":
        return {"type": "tool_search_call", "call_id": call.id, "execution": "client",
                "arguments": search_arguments(call.arguments)}  # fmt: skip
    else:
        item = {"type": "function_call", "call_id": call.id, "name": own_name(call.name, spec),
                "arguments": call.arguments}  # fmt: skip
    if spec is not None and spec.namespace is not None:
        item["namespace"] = spec.namespace.name
    return item


def own_name(name: str, spec: ToolSpec | None) -> str:
    """The name the client gave a tool: a namespaced function's without its namespace."""
    if spec is not None and spec.namespace is not None and spec.native is not None:
        return str(spec.native.value.get("name") or name)
    return name


def _outputs(message: Message, spec: ToolSpec | None, loadable: dict[str, ToolSpec]) -> list[JsonObject]:
    """A tool message's output item; the gateway's own tool search's carries the definitions its result loads,
    and, when it loads none, its text (why nothing was found) as a developer message after it."""
    if spec is None or spec.kind != "tool_search" or spec.native is not None or message.native is not None:
        return [_output(message, spec)]
    found = [loadable[name] for name in message.loads if name in loadable]
    output = {"type": "tool_search_output", "call_id": message.tool_call_id or "", "execution": "client",
              "tools": loaded_tools(found)}  # fmt: skip
    if found or not message.text():
        return [output]
    return [output, {"type": "message", "role": "developer", "content": message.text()}]


def loaded_tools(specs: list[ToolSpec]) -> list[JsonObject]:
    """Tools as a tool search output loads them: as the client sent them (a namespace's functions in it), the
    others as functions."""
    wire: list[JsonObject] = []
    for tool in specs:
        native = tool.native.value if tool.native is not None and tool.native.format == "responses" else None
        if native is None:
            wire.append(_function(tool))
        elif tool.namespace is None:
            wire.append(native)
        else:
            space = tool.namespace
            wire.append({"type": "namespace", "name": space.name, "description": space.description, "tools": [native]})
    return wire


def _output(message: Message, spec: ToolSpec | None) -> JsonObject:
    """A tool message as the output item its call's type takes; one a Responses client sent (a tool search's
    output, with the tools it loaded) as it came."""
    if message.native is not None and message.native.format == "responses":
        return {key: value for key, value in message.native.value.items() if key not in STATELESS}
    call_id = message.tool_call_id or ""
    kind = spec.kind if spec is not None else "function"
    if kind == "custom":
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": message.text()}
    if kind == "tool_search":
        return {"type": "tool_search_output", "call_id": call_id, "execution": "client", "tools": []}
    # A shell's output too: Codex CLI answers local_shell_call with function_call_output, which OpenAI takes.
    return {"type": "function_call_output", "call_id": call_id, "output": message.text()}


def _content(content: str | list[Part] | None) -> str | list[JsonObject]:
    if not isinstance(content, list):
        return content or ""
    parts: list[JsonObject] = []
    for part in content:
        if part.kind == "text":
            parts.append({"type": "input_text", "text": part.text})
        elif part.kind == "image":
            image: JsonObject = {"type": "input_image", "image_url": part.url}
            detail = ((part.native or {}).get("image_url") or {}).get("detail")
            if detail:
                image["detail"] = detail
            parts.append(image)
    return parts


def tools_of(tools: list[ToolSpec], messages: list[Message]) -> list[JsonObject]:
    """The tools as the client sent them (a namespace's functions regrouped under it, in the place of its first),
    the others as functions. Tools a tool search's output in the conversation already carries are not repeated."""
    loaded = _searched(messages)
    wire: list[JsonObject] = []
    groups: dict[str, JsonObject] = {}
    for tool in tools:
        native = tool.native.value if tool.native is not None and tool.native.format == "responses" else None
        if native is None and tool.kind == "tool_search":  # the gateway's search, run by the gateway
            wire.append({"type": "tool_search", "execution": "client", "description": tool.description,
                         "parameters": tool.parameters})  # fmt: skip
        elif native is None:
            wire.append(_function(tool))
        elif tool.namespace is None:
            if tool.name not in loaded:
                wire.append(native)
        elif tool.name not in loaded:
            space = tool.namespace
            if space.name not in groups:
                groups[space.name] = {"type": "namespace", "name": space.name, "description": space.description,
                                      "tools": []}  # fmt: skip
                wire.append(groups[space.name])
            groups[space.name]["tools"].append(native)
    return wire


def _searched(messages: list[Message]) -> set[str]:
    """The names (a namespace's functions by their flat names) of the tools tool searches in the conversation
    returned: the upstream reads them there."""
    names: set[str] = set()
    for message in messages:
        native = message.native
        if message.role != "tool" or native is None or native.format != "responses":
            continue
        for tool in native.value.get("tools") or ():
            if not isinstance(tool, dict):
                continue
            inner = tool.get("tools") if tool.get("type") == "namespace" else None
            if isinstance(inner, list):
                group = str(tool.get("name"))
                names |= {flat_name(group, str(each.get("name"))) for each in inner if isinstance(each, dict)}
            else:
                names.add(str(tool.get("name") or tool.get("type")))
    return names


def _function(tool: ToolSpec) -> JsonObject:
    wire: JsonObject = {"type": "function", "name": tool.name, "description": tool.description}
    wire["parameters"] = tool.parameters
    if tool.strict is not None:
        wire["strict"] = tool.strict
    return wire
