"""What a Responses upstream's answers must look like before the codec reads them: a `response` and its stream
events. Only the fields the gateway reads are modelled, each output item by its type (an item of a type the
gateway does not read needs only a `type`); the original dict goes on, not the model."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, StrictInt, StrictStr, Tag


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


class TextPart(_Shape):
    type: StrictStr
    text: StrictStr | None = None
    refusal: StrictStr | None = None


class MessageOut(_Shape):
    type: Literal["message"]
    content: list[TextPart] = []


class ReasoningOut(_Shape):
    type: Literal["reasoning"]
    summary: list[TextPart] = []
    content: list[TextPart] | None = None
    encrypted_content: StrictStr | None = None


class FunctionCallOut(_Shape):
    type: Literal["function_call"]
    call_id: StrictStr
    name: StrictStr
    arguments: StrictStr
    namespace: StrictStr | None = None


class CustomCallOut(_Shape):
    type: Literal["custom_tool_call"]
    call_id: StrictStr
    name: StrictStr
    input: StrictStr
    namespace: StrictStr | None = None


class ShellCallOut(_Shape):
    type: Literal["local_shell_call"]
    call_id: StrictStr | None = None
    id: StrictStr | None = None
    action: dict[str, Any]


class SearchCallOut(_Shape):
    type: Literal["tool_search_call"]
    call_id: StrictStr | None = None
    id: StrictStr | None = None
    execution: StrictStr | None = None


class OtherOut(_Shape):
    """An item the upstream ran or made itself (a web search, ...): passed on as it came."""

    type: StrictStr


SHAPES = {
    "message": MessageOut, "reasoning": ReasoningOut, "function_call": FunctionCallOut,
    "custom_tool_call": CustomCallOut, "local_shell_call": ShellCallOut, "tool_search_call": SearchCallOut,
}  # fmt: skip


def _shape(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if isinstance(kind, str) and kind in SHAPES else "other"


OutputItem = Annotated[
    Annotated[MessageOut, Tag("message")]
    | Annotated[ReasoningOut, Tag("reasoning")]
    | Annotated[FunctionCallOut, Tag("function_call")]
    | Annotated[CustomCallOut, Tag("custom_tool_call")]
    | Annotated[ShellCallOut, Tag("local_shell_call")]
    | Annotated[SearchCallOut, Tag("tool_search_call")]
    | Annotated[OtherOut, Tag("other")],
    Discriminator(_shape),
]


class TokenDetails(_Shape):
    cached_tokens: StrictInt | None = None
    reasoning_tokens: StrictInt | None = None


class Usage(_Shape):
    input_tokens: StrictInt | None = None
    output_tokens: StrictInt | None = None
    total_tokens: StrictInt | None = None
    input_tokens_details: TokenDetails | None = None
    output_tokens_details: TokenDetails | None = None


class Problem(_Shape):
    code: StrictStr | None = None
    message: StrictStr | None = None


class Response(_Shape):
    id: StrictStr | None = None
    model: StrictStr | None = None
    status: StrictStr | None = None
    output: list[OutputItem] = []
    usage: Usage | None = None
    error: Problem | None = None
    incomplete_details: dict[str, Any] | None = None


class StreamEvent(_Shape):
    type: StrictStr
    response: Response | None = None
    item: OutputItem | None = None
    output_index: StrictInt | None = None
    summary_index: StrictInt | None = None
    delta: StrictStr | None = None
    code: StrictStr | None = None
    message: StrictStr | None = None
