"""Responses tools -> the engine's tools, and the calls of tools a client runs itself, both ways.

Every tool a client runs becomes a function, so an upstream that knows only functions can call it: a `custom`
(freeform) tool takes one string, `input` (its grammar told in the description); `local_shell` takes its `exec`
action; a client-executed `tool_search` its own parameters; a `namespace`'s functions are named
`{namespace}__{name}`, as Codex flattens them. Each keeps its definition as sent (`native`, `kind`, `namespace`),
so an upstream that speaks Responses can get it back unchanged. The model's calls of them come back to the client
as the item of their type (`custom_tool_call`, `local_shell_call`, `tool_search_call`, `function_call` with its
`namespace`), and those items, passed back, become calls again.
"""

from __future__ import annotations

import json
from typing import Any

from app.codecs.responses.protocol import (
    ClientToolDefinition,
    CustomTool,
    FunctionTool,
    LocalShellTool,
    NamespaceTool,
    ToolSearchTool,
)
from app.core.model import ClientTool, HostedTool, JsonObject, Namespace, Native, ToolCall, ToolSpec

CUSTOM_INPUT = "input"  # the one parameter a custom tool has as a function
CUSTOM_PARAMETERS: JsonObject = {
    "type": "object",
    "properties": {CUSTOM_INPUT: {"type": "string", "description": "The tool's input, as freeform text."}},
    "required": [CUSTOM_INPUT],
    "additionalProperties": False,
}
LOCAL_SHELL = "local_shell"
LOCAL_SHELL_DESCRIPTION = "Run a command on the user's machine and get its output."
LOCAL_SHELL_PARAMETERS: JsonObject = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "description": "The program and its arguments."},
        "working_directory": {"type": "string"},
        "timeout_ms": {"type": "integer"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["command"],
}
TOOL_SEARCH = "tool_search"
TOOL_SEARCH_DESCRIPTION = "Search the client's deferred tools; the tools found can be called next."
TOOL_SEARCH_PARAMETERS: JsonObject = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}
DEFAULT_PARAMETERS: JsonObject = {"type": "object", "properties": {}}
CALL_PREFIXES = {"function": "fc", "custom": "ctc", "local_shell": "lsh", "tool_search": "tsc"}  # their items' ids


def flat_name(namespace: str, name: str) -> str:
    """A namespaced function's name for an upstream without namespaces."""
    return f"{namespace.rstrip('_')}__{name.lstrip('_')}"


def client_tools(definition: ClientToolDefinition, loaded: bool = False) -> list[ClientTool]:
    """One definition as the engine's tools (a namespace's functions each); `loaded`: never deferred (tools a tool
    search returned)."""
    if isinstance(definition, NamespaceTool):
        group = Namespace(definition.name, definition.description)
        return [_tool(tool, loaded, group) for tool in definition.tools]
    return [_tool(definition, loaded)]


def _tool(definition: ClientToolDefinition, loaded: bool, namespace: Namespace | None = None) -> ClientTool:
    native = Native("responses", definition.model_dump(exclude={"defer_loading"}, exclude_none=True))
    if isinstance(definition, FunctionTool):
        name = flat_name(namespace.name, definition.name) if namespace else definition.name
        spec = ToolSpec(name, definition.description or "", definition.parameters or DEFAULT_PARAMETERS,
                        definition.strict, native, namespace=namespace)  # fmt: skip
        return ClientTool(spec, deferred=definition.defer_loading and not loaded)
    if isinstance(definition, CustomTool):
        name = flat_name(namespace.name, definition.name) if namespace else definition.name
        description = (definition.description or "") + _format_note(definition.format)
        spec = ToolSpec(name, description, CUSTOM_PARAMETERS, None, native, "custom", namespace)
        return ClientTool(spec, deferred=definition.defer_loading and not loaded)
    if isinstance(definition, LocalShellTool):
        return ClientTool(ToolSpec(LOCAL_SHELL, LOCAL_SHELL_DESCRIPTION, LOCAL_SHELL_PARAMETERS, None, native,
                                   "local_shell"))  # fmt: skip
    assert isinstance(definition, ToolSearchTool)
    description = definition.description or TOOL_SEARCH_DESCRIPTION
    parameters = definition.parameters or TOOL_SEARCH_PARAMETERS
    return ClientTool(ToolSpec(TOOL_SEARCH, description, parameters, None, native, "tool_search"))


def _format_note(format: dict[str, Any] | None) -> str:
    """A custom tool's input format, told to a model that cannot be held to it."""
    if not format or format.get("type") != "grammar":
        return "\n\nCall it with its input as freeform text in the `input` string (not JSON)."
    return (
        "\n\nCall it with its input as freeform text in the `input` string (not JSON). The text must match this "
        f"{format.get('syntax') or ''} grammar:\n{format.get('definition') or ''}"
    )


def hosted_tool(raw: dict[str, Any], index: int) -> HostedTool:
    return HostedTool(str(raw.get("type")), Native("responses", raw), f"tools[{index}]")


# The calls of the client's tools, between the engine's form (JSON arguments) and the Responses items.


def call_item(call: ToolCall, spec: ToolSpec | None, ident: str, status: str = "completed") -> JsonObject:
    """The output item of a call of the client's tool `spec` (None: a plain function)."""
    done = status == "completed"
    kind = spec.kind if spec is not None else "function"
    name = _own_name(spec) if spec is not None else call.name
    item: JsonObject
    if kind == "custom":
        item = {"id": ident, "type": "custom_tool_call", "call_id": call.id, "name": name,
                "input": custom_input(call.arguments) if done else "", "status": status}  # fmt: skip
    elif kind == "local_shell":
        item = {"id": ident, "type": "local_shell_call", "call_id": call.id, "action": shell_action(call.arguments),
                "status": status}  # fmt: skip
    elif kind == "tool_search":
        item = {"id": ident, "type": "tool_search_call", "call_id": call.id, "execution": "client",
                "arguments": search_arguments(call.arguments), "status": status}  # fmt: skip
    else:
        item = {"id": ident, "type": "function_call", "call_id": call.id, "name": name,
                "arguments": call.arguments if done else "", "status": status}  # fmt: skip
    if spec is not None and spec.namespace is not None and kind in ("custom", "function"):
        item["namespace"] = spec.namespace.name
    return item


def _own_name(spec: ToolSpec) -> str:
    """The name the client gave the tool (a namespaced function's without its namespace)."""
    if spec.namespace is not None and spec.native is not None:
        return str(spec.native.value.get("name") or spec.name)
    return spec.name


def custom_input(arguments: str) -> str:
    """A custom tool's freeform input from a function call's arguments; text that is not `{"input": "..."}` is
    taken as the input itself (a model may write the freeform text directly)."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    if isinstance(parsed, dict) and isinstance(parsed.get(CUSTOM_INPUT), str):
        return str(parsed[CUSTOM_INPUT])
    return arguments


def shell_action(arguments: str) -> JsonObject:
    """A `local_shell` call's `exec` action from its arguments; a command written as one string is run by a shell."""
    parsed = _object(arguments)
    command = parsed.get("command")
    if isinstance(command, str):
        command = ["bash", "-lc", command]
    elif not (isinstance(command, list) and all(isinstance(part, str) for part in command)):
        command = ["bash", "-lc", arguments] if not parsed else []
    action: JsonObject = {"type": "exec", "command": command, "env": parsed.get("env") or {}}
    for key in ("working_directory", "timeout_ms", "user"):
        if parsed.get(key) is not None:
            action[key] = parsed[key]
    return action


def search_arguments(arguments: str) -> JsonObject:
    parsed = _object(arguments)
    return parsed if parsed else {"query": arguments}


def _object(arguments: str) -> JsonObject:
    try:
        parsed = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def custom_arguments(text: str) -> str:
    """A custom tool's input as the engine's (JSON) arguments."""
    return json.dumps({CUSTOM_INPUT: text}, ensure_ascii=False)


def action_arguments(action: dict[str, Any]) -> str:
    """A `local_shell_call`'s action as the engine's arguments."""
    return json.dumps({key: value for key, value in action.items() if key != "type"}, ensure_ascii=False)
