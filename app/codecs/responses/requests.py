"""Responses API requests <-> the engine's model: a client's request in (parameters under the chat names every
OpenAI-compatible upstream takes), and a round out as a Responses request body, for an upstream that speaks the
Responses API.
"""

from __future__ import annotations

from typing import Any

from app.codecs.responses.items import messages_of
from app.codecs.responses.protocol import FunctionTool, ParsedResponses
from app.core.model import ChatRequest, ClientTool, JsonObject, Message, Options, Part, ToolSpec, UpstreamRequest

PASSED = ("temperature", "top_p", "user", "parallel_tool_calls")  # the same name and meaning in both APIs


def chat_request(parsed: ParsedResponses) -> ChatRequest:
    request = parsed.request
    params: JsonObject = {}
    passed: dict[str, object] = {"temperature": request.temperature, "top_p": request.top_p, "user": request.user}
    params.update({name: value for name, value in passed.items() if value is not None})
    if request.max_output_tokens is not None:
        params["max_tokens"] = request.max_output_tokens  # the name every OpenAI-compatible upstream takes
    text_format = request.text.format if request.text is not None else None
    if text_format is not None and text_format.type == "json_object":
        params["response_format"] = {"type": "json_object"}
    elif text_format is not None and text_format.type == "json_schema":
        schema: JsonObject = {"name": text_format.name, "schema": text_format.json_schema}
        for name, value in (("description", text_format.description), ("strict", text_format.strict)):
            if value is not None:
                schema[name] = value
        params["response_format"] = {"type": "json_schema", "json_schema": schema}
    if request.reasoning is not None and request.reasoning.effort is not None:
        params["reasoning_effort"] = request.reasoning.effort
    if request.stream:
        params["stream_options"] = {"include_usage": True}  # a response always reports its usage
    choice = request.tool_choice
    if isinstance(choice, dict):
        choice = {"type": "function", "function": {"name": choice["name"]}}
    return ChatRequest(
        model=request.model,
        messages=messages_of(parsed.items, request.instructions),
        tools=[_client_tool(tool) for tool in parsed.tools],
        options=Options(tool_choice=choice, parallel_tool_calls=request.parallel_tool_calls, params=params),
        stream=request.stream,
        tool_set=request.tool_set,
        session_id=request.session_id,
    )


def _client_tool(tool: FunctionTool) -> ClientTool:
    parameters = tool.parameters or {"type": "object", "properties": {}}
    function: JsonObject = {"name": tool.name, "description": tool.description or "", "parameters": parameters}
    if tool.strict is not None:
        function["strict"] = tool.strict
    spec = ToolSpec(tool.name, tool.description or "", parameters, openai={"type": "function", "function": function})
    return ClientTool(spec, deferred=tool.defer_loading)


def request_body(request: UpstreamRequest) -> JsonObject:
    """The round as a Responses request body. Nothing is stored upstream: the engine sends the whole conversation
    every round, as it does to a chat upstream."""
    options, params = request.options, request.options.params
    body: JsonObject = {"model": request.model, "input": [item for m in request.messages for item in input_of(m)]}
    if request.tools:
        body["tools"] = [_tool(tool) for tool in request.tools]
    choice = options.tool_choice if options.tool_choice is not None else params.get("tool_choice")
    if isinstance(choice, dict):
        choice = {"type": "function", "name": choice["function"]["name"]}
    if choice is not None:
        body["tool_choice"] = choice
    passed = {**params, "parallel_tool_calls": options.parallel_tool_calls}
    body.update({name: passed[name] for name in PASSED if passed.get(name) is not None})
    max_tokens = params.get("max_completion_tokens") or params.get("max_tokens")
    if max_tokens is not None:
        body["max_output_tokens"] = max_tokens
    text_format = _text_format(params.get("response_format"))
    if text_format is not None:
        body["text"] = {"format": text_format}
    if params.get("reasoning_effort") is not None:
        body["reasoning"] = {"effort": params["reasoning_effort"]}
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
    function = (tool.openai or {}).get("function") or {}
    wire: JsonObject = {"type": "function", "name": tool.name, "description": tool.description}
    wire["parameters"] = tool.parameters
    if function.get("strict") is not None:
        wire["strict"] = function["strict"]
    return wire


def _text_format(response_format: Any) -> JsonObject | None:
    """Chat's `response_format` as Responses' `text.format`."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") != "json_schema":
        return {"type": response_format["type"]} if isinstance(response_format.get("type"), str) else None
    schema = response_format.get("json_schema") or {}
    text_format: JsonObject = {"type": "json_schema", "name": schema.get("name"), "schema": schema.get("schema")}
    text_format.update({key: schema[key] for key in ("description", "strict") if schema.get(key) is not None})
    return text_format
