"""Responses API requests <-> the engine's model: a client's request in (its parameters typed), and a round out
as a Responses request body, for an upstream that speaks the Responses API.
"""

from __future__ import annotations

from app.codecs.responses.items import messages_of
from app.codecs.responses.protocol import FunctionTool, ParsedResponses
from app.core.model import (
    ChatRequest,
    ChoiceMode,
    ClientTool,
    JsonObject,
    Message,
    Options,
    Part,
    Reasoning,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
    UpstreamRequest,
)

MODES: dict[str, ChoiceMode] = {"auto": "auto", "none": "none", "required": "required"}  # checked by the front


def chat_request(parsed: ParsedResponses) -> ChatRequest:
    request = parsed.request
    options = Options(
        max_tokens=request.max_output_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        parallel_tool_calls=request.parallel_tool_calls,
        user=request.user,
        include_usage=True,  # a response always reports its usage
    )
    text_format = request.text.format if request.text is not None else None
    if text_format is not None and text_format.type != "text":
        options.response_format = ResponseFormat(
            text_format.type, text_format.name, text_format.json_schema, text_format.description, text_format.strict
        )
    if request.reasoning is not None and request.reasoning.effort is not None:
        options.reasoning = Reasoning(effort=request.reasoning.effort)
    choice = request.tool_choice
    if isinstance(choice, dict):
        options.tool_choice = ToolChoice("tool", choice["name"])
    elif choice is not None:
        options.tool_choice = ToolChoice(MODES[choice])
    return ChatRequest(
        model=request.model,
        messages=messages_of(parsed.items, request.instructions),
        tools=[_client_tool(tool) for tool in parsed.tools],
        options=options,
        stream=request.stream,
        tool_set=request.tool_set,
        session_id=request.session_id,
    )


def _client_tool(tool: FunctionTool) -> ClientTool:
    parameters = tool.parameters or {"type": "object", "properties": {}}
    spec = ToolSpec(tool.name, tool.description or "", parameters, tool.strict)
    return ClientTool(spec, deferred=tool.defer_loading)


def request_body(request: UpstreamRequest) -> JsonObject:
    """The round as a Responses request body. Nothing is stored upstream: the engine sends the whole conversation
    every round, as it does to a chat upstream."""
    options = request.options
    body: JsonObject = {"model": request.model, "input": [item for m in request.messages for item in input_of(m)]}
    if request.tools:
        body["tools"] = [_tool(tool) for tool in request.tools]
    choice = options.tool_choice
    if choice is not None:
        body["tool_choice"] = {"type": "function", "name": choice.name} if choice.mode == "tool" else choice.mode
    passed = {
        "temperature": options.temperature,
        "top_p": options.top_p,
        "user": options.user,
        "parallel_tool_calls": options.parallel_tool_calls,
        "max_output_tokens": options.max_tokens,
    }
    body.update({name: value for name, value in passed.items() if value is not None})
    if options.response_format is not None:
        body["text"] = {"format": _text_format(options.response_format)}
    if options.reasoning is not None and options.reasoning.effort is not None:
        body["reasoning"] = {"effort": options.reasoning.effort}
    body["store"] = False
    if request.stream:
        body["stream"] = True
    return body


def input_of(message: Message) -> list[JsonObject]:
    """One engine message as Responses input items: an assistant turn's calls become `function_call` items, a
    tool message a `function_call_output`."""
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.text()}]
    if message.role == "assistant":
        items: list[JsonObject] = []
        if message.text():
            text = {"type": "output_text", "text": message.text(), "annotations": []}
            items.append({"type": "message", "role": "assistant", "content": [text]})
        items += [
            {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}
            for call in message.tool_calls
        ]
        return items
    role = "system" if message.role in ("system", "developer") else "user"
    return [{"type": "message", "role": role, "content": _content(message.content)}]


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


def _tool(tool: ToolSpec) -> JsonObject:
    wire: JsonObject = {"type": "function", "name": tool.name, "description": tool.description}
    wire["parameters"] = tool.parameters
    if tool.strict is not None:
        wire["strict"] = tool.strict
    return wire


def _text_format(response_format: ResponseFormat) -> JsonObject:
    """The engine's response format as Responses' `text.format`."""
    if response_format.kind != "json_schema":
        return {"type": response_format.kind}
    text_format: JsonObject = {"type": "json_schema", "name": response_format.name, "schema": response_format.schema}
    for key, value in (("description", response_format.description), ("strict", response_format.strict)):
        if value is not None:
            text_format[key] = value
    return text_format
