"""OpenAI's Responses API as it travels: the request as a client sends it, validated.

Typed are the fields the gateway reads or translates; every other field is allowed. Parsing (and refusing what an
OpenAI-compatible chat upstream cannot take) is the front's; logic lives in `items`, `tools`, `requests` and
`answers`. Tools a client runs itself are typed (`function`, `custom`, `namespace`, `local_shell`, a client
`tool_search`); any other type is a hosted tool, run by the upstream or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from app.codecs import TOOL_NAME_PATTERN

SEARCH_TOOL = "tool_search"  # served by toolsift's own search, whatever the upstream, unless the client runs it


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionTool(_Open):
    type: Literal["function"]
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: StrictBool | None = None
    defer_loading: StrictBool = False


class CustomTool(_Open):
    """A tool whose input is freeform text, optionally constrained by a grammar (`format`)."""

    type: Literal["custom"]
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    format: dict[str, Any] | None = None
    defer_loading: StrictBool = False


class NamespaceTool(_Open):
    """Function and custom tools under one name; `defer_loading` applies to each tool inside, not to the group."""

    type: Literal["namespace"]
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = ""
    tools: list[Annotated[FunctionTool | CustomTool, Field(discriminator="type")]] = Field(min_length=1)


class LocalShellTool(_Open):
    type: Literal["local_shell"]


class ToolSearchTool(_Open):
    """Tool search: run by toolsift (`execution` absent or `server`), or by the client (`client`), whose own
    deferred tools it finds."""

    type: Literal["tool_search"]
    execution: Literal["server", "client"] | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None


ClientToolDefinition = FunctionTool | CustomTool | NamespaceTool | LocalShellTool | ToolSearchTool
CLIENT_TOOL_MODELS: dict[str, type[ClientToolDefinition]] = {
    "function": FunctionTool,
    "custom": CustomTool,
    "namespace": NamespaceTool,
    "local_shell": LocalShellTool,
    "tool_search": ToolSearchTool,
}


class TextFormat(_Open):
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    description: str | None = None
    strict: StrictBool | None = None

    @model_validator(mode="after")
    def _schema_named(self) -> TextFormat:
        if self.type == "json_schema" and (self.name is None or self.json_schema is None):
            raise ValueError("of type 'json_schema' needs a 'name' and a 'schema'")
        return self


class TextConfig(_Open):
    format: TextFormat | None = None


class ReasoningConfig(_Open):
    effort: str | None = None
    summary: str | None = None


class MessageItem(_Open):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[dict[str, Any]]


class FunctionCallItem(_Open):
    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str
    id: str | None = None
    namespace: str | None = None


class FunctionCallOutputItem(_Open):
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: str | list[dict[str, Any]]


class CustomToolCallItem(_Open):
    type: Literal["custom_tool_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: str
    id: str | None = None
    namespace: str | None = None


class CustomToolCallOutputItem(_Open):
    type: Literal["custom_tool_call_output"]
    call_id: str = Field(min_length=1)
    output: str | list[dict[str, Any]]


class LocalShellCallItem(_Open):
    """A `local_shell` call; its `exec` action is what the model asked to run."""

    type: Literal["local_shell_call"]
    call_id: str | None = None
    id: str | None = None
    action: dict[str, Any]

    @property
    def call(self) -> str:
        return self.call_id or self.id or ""


class LocalShellCallOutputItem(_Open):
    """Its output; OpenAI's type names the call in `id`, some clients in `call_id`."""

    type: Literal["local_shell_call_output"]
    id: str | None = None
    call_id: str | None = None
    output: str

    @model_validator(mode="after")
    def _names_its_call(self) -> LocalShellCallOutputItem:
        if not (self.call_id or self.id):
            raise ValueError("needs the call's id in 'call_id' (or 'id')")
        return self


class ToolSearchCallItem(_Open):
    type: Literal["tool_search_call"]
    call_id: str | None = None
    id: str | None = None
    arguments: Any = None
    execution: Literal["server", "client"] | None = None


class ToolSearchOutputItem(_Open):
    """The tools a tool search loaded: callable from here on in the conversation."""

    type: Literal["tool_search_output"]
    call_id: str | None = None
    id: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    execution: Literal["server", "client"] | None = None


class AdditionalToolsItem(_Open):
    """Tools a developer adds from this point of the conversation on."""

    type: Literal["additional_tools"]
    tools: list[dict[str, Any]] = Field(default_factory=list)


class ReasoningItem(_Open):
    type: Literal["reasoning"]
    id: str | None = None
    summary: list[dict[str, Any]] = Field(default_factory=list)
    content: list[dict[str, Any]] | None = None
    encrypted_content: str | None = None


class CompactionItem(_Open):
    """A compaction a client passes back: the conversation before it, summarised (`encrypted_content`)."""

    type: Literal["compaction"]
    id: str | None = None
    encrypted_content: str


class CompactionTriggerItem(_Open):
    """Asks for a compaction of everything before it (Codex's auto-compaction); it must be the last item."""

    type: Literal["compaction_trigger"]
    id: str | None = None


HOSTED_CALLS = (
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
    "mcp_list_tools",
)  # fmt: skip


class HostedCallItem(_Open):
    """A hosted tool's call the upstream ran itself (a web search, ...), passed back as it came: for an upstream
    that speaks Responses, with the turn it belongs to; another upstream never ran it."""

    type: Literal[
        "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
        "mcp_list_tools",
    ]  # fmt: skip
    id: str | None = None


class ItemReference(_Open):
    """An item of one of the caller's stored responses, by its id: the front puts the item itself in its place."""

    type: Literal["item_reference"] = "item_reference"
    id: str = Field(min_length=1)


InputItem = (
    MessageItem
    | FunctionCallItem
    | FunctionCallOutputItem
    | CustomToolCallItem
    | CustomToolCallOutputItem
    | LocalShellCallItem
    | LocalShellCallOutputItem
    | ToolSearchCallItem
    | ToolSearchOutputItem
    | AdditionalToolsItem
    | ReasoningItem
    | HostedCallItem
    | ItemReference
    | CompactionItem
    | CompactionTriggerItem
)
ITEM_MODELS: dict[str, type[InputItem]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "function_call_output": FunctionCallOutputItem,
    "custom_tool_call": CustomToolCallItem,
    "custom_tool_call_output": CustomToolCallOutputItem,
    "local_shell_call": LocalShellCallItem,
    "local_shell_call_output": LocalShellCallOutputItem,
    "tool_search_call": ToolSearchCallItem,
    "tool_search_output": ToolSearchOutputItem,
    "additional_tools": AdditionalToolsItem,
    "reasoning": ReasoningItem,
    "item_reference": ItemReference,
    "compaction": CompactionItem,
    "compaction_trigger": CompactionTriggerItem,
    **{kind: HostedCallItem for kind in HOSTED_CALLS},
}


class ResponsesRequest(_Open):
    model: str = Field(min_length=1)
    input: str | list[dict[str, Any]] | None = None
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: StrictBool | None = None
    max_output_tokens: StrictInt | None = Field(None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    metadata: dict[str, str] | None = None
    include: list[str] | None = None
    text: TextConfig | None = None
    reasoning: ReasoningConfig | None = None
    stream: StrictBool = False
    store: StrictBool | None = None
    previous_response_id: str | None = Field(None, min_length=1)
    user: str | None = None
    background: StrictBool | None = None
    tool_set: str | None = None
    session_id: str | None = Field(None, min_length=1)


@dataclass
class ParsedResponses:
    """A validated request: its fields, its input as typed items (`raw_items` as sent), the tools the client runs
    (`tools`; `loaded`: those its conversation's tool searches returned) and the hosted ones (`hosted`: raw, with
    their place in `tools`)."""

    request: ResponsesRequest
    items: list[InputItem]
    raw_items: list[dict[str, Any]]
    tools: list[ClientToolDefinition]
    hosted: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    loaded: list[ClientToolDefinition] = field(default_factory=list)
