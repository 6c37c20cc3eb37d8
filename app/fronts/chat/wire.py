"""OpenAI chat-completions requests as they arrive: the body parsed and validated into the codec's protocol types.
Logic lives elsewhere."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from app.codecs.openai_chat.protocol import ChatCompletionRequest
from app.common.errors import GatewayError
from app.fronts.wire import check_counts, invalid_request, load_body


def parse_chat_request(
    raw_body: bytes, max_messages: int = 2000, max_tools: int = 512
) -> tuple[ChatCompletionRequest, dict[str, Any]]:
    """Decode and validate a request body; return the model and the raw dict for pass-through."""
    payload = load_body(raw_body)
    check_counts(payload, max_messages, max_tools)
    try:
        request = ChatCompletionRequest.model_validate(payload)
    except ValidationError as exc:
        raise invalid_request(exc) from None
    for index, message in enumerate(request.messages):
        if message.role == "tool" and message.tool_call_id is None:
            raise GatewayError(
                400,
                f"Invalid request: 'messages[{index}].tool_call_id' is required for role 'tool'.",
                param=f"messages[{index}].tool_call_id",
            )
    return request, payload
