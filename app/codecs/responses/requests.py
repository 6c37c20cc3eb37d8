"""Responses API requests <-> the engine's model: a client's request in (its parameters typed), and a round out
as a Responses request body, for an upstream that speaks the Responses API.
"""

from __future__ import annotations

from app.codecs.responses.input import input_items, own_name, tools_of
from app.codecs.responses.items import messages_of
from app.codecs.responses.protocol import ParsedResponses, ResponsesRequest
from app.codecs.responses.tools import client_tools, hosted_tool
from app.core.model import (
    ChatRequest,
    ChoiceMode,
    ClientTool,
    JsonObject,
    Options,
    Reasoning,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
    UpstreamRequest,
)

ENCRYPTED_REASONING = "reasoning.encrypted_content"
MODES: dict[str, ChoiceMode] = {"auto": "auto", "none": "none", "required": "required"}  # checked by the front
# Read here or by the front; every other field passes on to an upstream that speaks Responses (`include`, say).
READ_FIELDS = frozenset(
    {
        "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
        "temperature", "top_p", "text", "reasoning", "stream", "store", "previous_response_id", "user",
        "background", "tool_set", "session_id", "metadata",
    }
)  # fmt: skip


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
    reasoning = request.reasoning
    if reasoning is not None and (reasoning.effort is not None or reasoning.summary is not None):
        options.reasoning = Reasoning(effort=reasoning.effort, summary=reasoning.summary)
    choice = request.tool_choice
    if isinstance(choice, dict):
        options.tool_choice = ToolChoice("tool", choice["name"])
    elif choice is not None:
        options.tool_choice = ToolChoice(MODES[choice])
    passed = _passed(request)
    if passed:
        options.params["responses"] = passed
    return ChatRequest(
        model=request.model,
        messages=messages_of(parsed.items, request.instructions),
        tools=request_tools(parsed),
        options=options,
        stream=request.stream,
        tool_set=request.tool_set,
        session_id=request.session_id,
        hosted_tools=[hosted_tool(raw, index) for raw, index in parsed.hosted],
    )


def request_tools(parsed: ParsedResponses) -> list[ClientTool]:
    """The client's tools, then those its conversation's tool searches loaded that it does not send itself."""
    tools = [tool for definition in parsed.tools for tool in client_tools(definition)]
    names = {tool.spec.name for tool in tools}
    for definition in parsed.loaded:
        for tool in client_tools(definition, loaded=True):
            if tool.spec.name not in names:
                names.add(tool.spec.name)
                tools.append(tool)
    return tools


def _passed(request: ResponsesRequest) -> JsonObject:
    """The fields no typed option covers, for an upstream that speaks Responses: `include`, `prompt_cache_key`,
    `text.verbosity`, ..."""
    passed = {key: value for key, value in (request.model_extra or {}).items() if key not in READ_FIELDS}
    if request.include:
        passed["include"] = list(request.include)
    verbosity = (request.text.model_extra or {}).get("verbosity") if request.text is not None else None
    if verbosity is not None:
        passed["text"] = {"verbosity": verbosity}
    return passed


def request_body(request: UpstreamRequest) -> JsonObject:
    """The round as a Responses request body. Nothing is stored upstream: the engine sends the whole conversation
    every round, as it does to a chat upstream."""
    options = request.options
    items = input_items(request.messages, request.tools, request.deferred)
    if request.compact:  # the upstream compacts everything before it, and answers with its compaction item
        items.append({"type": "compaction_trigger"})
    body: JsonObject = {"model": request.model, "input": items}
    tools = [*tools_of(request.tools, request.messages), *(tool.native.value for tool in request.hosted_tools)]
    if tools:
        body["tools"] = tools
    choice = options.tool_choice
    if choice is not None:
        body["tool_choice"] = _tool_choice(choice, request.tools) if choice.mode == "tool" else choice.mode
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
    reasoning = options.reasoning
    if reasoning is not None and (reasoning.effort is not None or reasoning.summary is not None):
        body["reasoning"] = {
            key: value for key, value in (("effort", reasoning.effort), ("summary", reasoning.summary)) if value
        }
    own = options.params.get("responses") or {}  # `include`, `prompt_cache_key`, ...: under the typed fields
    if isinstance(own.get("text"), dict) and "text" in body:
        body["text"] = {**own["text"], **body["text"]}
    body = {**own, **body}
    body["store"] = False
    if request.stream:
        body["stream"] = True
    return body


def with_reasoning_kept(body: JsonObject) -> JsonObject:
    """`body` asking for reasoning it can send back (`encrypted_content`, since nothing is stored upstream) when the
    round reasons: it sets reasoning options or carries reasoning items. Not otherwise, as a model that does not
    reason may refuse the request."""
    include = list(body.get("include") or ())
    reasons = "reasoning" in body or any(item.get("type") == "reasoning" for item in body["input"])
    if reasons and ENCRYPTED_REASONING not in include:
        body["include"] = [*include, ENCRYPTED_REASONING]
    return body


def _tool_choice(choice: ToolChoice, tools: list[ToolSpec]) -> JsonObject:
    """The one tool the model must call, by the type and name the client gave it."""
    spec = next((tool for tool in tools if tool.name == choice.name), None)
    kind = "custom" if spec is not None and spec.kind == "custom" else "function"
    return {"type": kind, "name": own_name(choice.name, spec)}


def _text_format(response_format: ResponseFormat) -> JsonObject:
    """The engine's response format as Responses' `text.format`."""
    if response_format.kind != "json_schema":
        return {"type": response_format.kind}
    text_format: JsonObject = {"type": "json_schema", "name": response_format.name, "schema": response_format.schema}
    for key, value in (("description", response_format.description), ("strict", response_format.strict)):
        if value is not None:
            text_format[key] = value
    return text_format
