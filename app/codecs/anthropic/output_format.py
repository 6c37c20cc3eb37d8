"""Anthropic's structured outputs (`output_config.format`) <-> the engine's `ResponseFormat`.

A Messages client's `{"type": "json_schema", "schema": ...}` becomes the typed format, so a chat upstream gets it
as `response_format` and a Responses one as `text.format`; the other way, a chat or Responses client's JSON schema
reaches an Anthropic upstream as `output_config.format`. What Anthropic has no form for (plain `json_object`, any
JSON with no schema) is refused with a 400 naming the parameter, never dropped.
"""

from __future__ import annotations

from app.common.errors import GatewayError
from app.core.model import JsonObject, ResponseFormat

OUTPUT_NAME = "output"  # the name a chat upstream's `json_schema` needs; Anthropic's format has none


def format_in(native: JsonObject) -> ResponseFormat | None:
    """The typed format of a Messages body's `output_config.format`, taken out of `native` (its other settings,
    `effort`, stay there for an Anthropic upstream); None when it has none or one of another shape."""
    config = native.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    if not (isinstance(fmt, dict) and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict)):
        return None
    assert isinstance(config, dict)
    rest = {key: value for key, value in config.items() if key != "format"}
    if rest:
        native["output_config"] = rest
    else:
        del native["output_config"]
    return ResponseFormat("json_schema", OUTPUT_NAME, fmt["schema"], strict=True)


def with_format(body: JsonObject, response_format: ResponseFormat | None) -> JsonObject:
    """`body` with a typed format as `output_config.format` (beside the client's other `output_config`)."""
    if response_format is None or response_format.kind == "text":
        return body
    if response_format.kind != "json_schema" or response_format.schema is None:
        raise GatewayError(
            400,
            "This model's upstream (Anthropic) takes structured output as a JSON schema only: send "
            "response_format {'type': 'json_schema', ...} (text.format on the Responses API), not json_object.",
            param="response_format",
            code="unsupported_response_format",
        )
    config = body.get("output_config")
    config = dict(config) if isinstance(config, dict) else {}
    config["format"] = {"type": "json_schema", "schema": response_format.schema}
    return {**body, "output_config": config}
