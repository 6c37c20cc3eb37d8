"""OpenAI chat-completions parameters <-> the engine's typed `Options`.

A parameter becomes typed only when writing it back gives exactly what came in, so an OpenAI-compatible upstream
gets a chat client's parameters unchanged; the rest stay in `params["openai"]`, for OpenAI-compatible upstreams
only. Both spellings of the token limit (`max_tokens`, `max_completion_tokens`, which some models require) stay
there as sent: the typed `max_tokens` is only what another format reads.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from app.core.model import JsonObject, Options, Reasoning, ResponseFormat, ToolChoice

TOKEN_LIMITS = ("max_completion_tokens", "max_tokens")  # the first one set is the limit, as OpenAI reads them
CHOICE_MODES = ("auto", "none", "required")
DROPPED_WHEN_NULL = ("tool_choice", "parallel_tool_calls", "stop")  # null is their default: not sent on


def options_of(params: JsonObject, skipped: Collection[str] = ()) -> Options:
    """Chat-completions parameters (a request body without its `skipped` fields, or a model alias's configured
    parameters) as typed options and OpenAI pass-through."""
    options = Options()
    typed = {key for key in DROPPED_WHEN_NULL if key in params and params[key] is None}
    options.max_tokens = next((params[key] for key in TOKEN_LIMITS if _is_int(params.get(key))), None)
    for key in ("temperature", "top_p"):
        if _is_number(params.get(key)):
            setattr(options, key, params[key])
            typed.add(key)
    stop = params.get("stop")
    if isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(item, str) for item in stop)):
        options.stop = stop
        typed.add("stop")
    if isinstance(params.get("reasoning_effort"), str):
        options.reasoning = Reasoning(effort=params["reasoning_effort"])
        typed.add("reasoning_effort")
    if isinstance(params.get("parallel_tool_calls"), bool):
        options.parallel_tool_calls = params["parallel_tool_calls"]
        typed.add("parallel_tool_calls")
    if isinstance(params.get("user"), str):
        options.user = params["user"]
        typed.add("user")
    if "tool_choice" in params:
        options.tool_choice = tool_choice_in(params["tool_choice"])
        if options.tool_choice is not None:
            typed.add("tool_choice")
    if "response_format" in params:
        options.response_format = response_format_in(params["response_format"])
        if options.response_format is not None:
            typed.add("response_format")
    passed = {key: value for key, value in params.items() if key not in skipped and key not in typed}
    if passed:
        options.params = {"openai": passed}
    return options


def write_options(body: JsonObject, options: Options, stream: bool) -> None:
    """The typed options into a chat-completions `body` under their chat names."""
    limit = options.max_tokens
    if limit is not None and limit not in (body.get("max_tokens"), body.get("max_completion_tokens")):
        body["max_tokens"] = limit
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if options.user is not None:
        body["user"] = options.user
    if options.response_format is not None:
        body["response_format"] = response_format_out(options.response_format)
    if options.reasoning is not None and options.reasoning.effort is not None:
        body["reasoning_effort"] = options.reasoning.effort
    if stream:  # every stream ends with its usage, for the day's token budget; a client sees it only if it asked
        passed = body.get("stream_options")
        body["stream_options"] = {**(passed if isinstance(passed, dict) else {}), "include_usage": True}
    if options.tool_choice is not None:
        body["tool_choice"] = tool_choice_out(options.tool_choice)
    if options.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.stop is not None:
        body["stop"] = options.stop


def tool_choice_in(choice: Any) -> ToolChoice | None:
    """A chat `tool_choice` as the engine's; None for a shape it has no typed form for (passed on as is)."""
    if choice in CHOICE_MODES:
        return ToolChoice(choice)
    if isinstance(choice, dict) and choice.keys() == {"type", "function"} and choice["type"] == "function":
        function = choice["function"]
        if isinstance(function, dict) and function.keys() == {"name"} and isinstance(function["name"], str):
            return ToolChoice("tool", function["name"])
    return None


def tool_choice_out(choice: ToolChoice) -> str | JsonObject:
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def response_format_in(value: Any) -> ResponseFormat | None:
    """A chat `response_format` as the engine's; None for a shape it has no typed form for (passed on as is)."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return None
    kind = value["type"]
    if kind in ("text", "json_object") and value.keys() == {"type"}:
        return ResponseFormat(kind)
    schema = value.get("json_schema")
    if kind != "json_schema" or value.keys() != {"type", "json_schema"} or not isinstance(schema, dict):
        return None
    typed = ResponseFormat(
        "json_schema", schema.get("name"), schema.get("schema"), schema.get("description"), schema.get("strict")
    )
    return typed if response_format_out(typed) == value else None


def response_format_out(value: ResponseFormat) -> JsonObject:
    if value.kind != "json_schema":
        return {"type": value.kind}
    schema: JsonObject = {"name": value.name, "schema": value.schema}
    for name, field in (("description", value.description), ("strict", value.strict)):
        if field is not None:
            schema[name] = field
    return {"type": "json_schema", "json_schema": schema}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
