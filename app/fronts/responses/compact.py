"""`POST /v1/responses/compact`: a conversation compacted, answered as the API's `response.compaction` object.

The request (`model`, `input`, `instructions`, `previous_response_id`) is a Responses request whose input ends
with a `compaction_trigger`, run through the same front: the routed model writes the summary, which comes back as
one `compaction` item after the conversation's user messages, as OpenAI's endpoint answers. Nothing is stored.
"""

from __future__ import annotations

import json
from typing import Any

from app.common.errors import GatewayError
from app.core.model import ChatRequest, JsonObject
from app.engine.answer import Answer
from app.fronts.base import Call
from app.fronts.responses.front import ResponsesFront
from app.fronts.responses.items import ResponseCall
from app.fronts.wire import load_body

FIELDS = ("model", "input", "instructions", "previous_response_id", "prompt_cache_key")


class CompactFront(ResponsesFront):
    name = "responses"

    def parse(self, body: bytes, call: Call) -> ChatRequest:
        payload = load_body(body)
        unknown = sorted(set(payload) - set(FIELDS))
        if unknown:
            raise GatewayError(
                400, f"Invalid request: unknown parameter '{unknown[0]}' (compact takes {', '.join(FIELDS)}).",
                param=unknown[0], code="unknown_parameter",
            )  # fmt: skip
        items: Any = payload.get("input") or []
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list):
            raise GatewayError(400, "Invalid request: 'input' must be a string or a list of items.", param="input")
        asked = {key: payload[key] for key in FIELDS if key in payload and key != "input"}
        request = {**asked, "input": [*items, {"type": "compaction_trigger"}], "store": False, "stream": False}
        return super().parse(json.dumps(request).encode(), call)

    async def answer(self, answer: Answer, call: Call) -> JsonObject:
        body = await super().answer(answer, call)
        assert isinstance(call.state, ResponseCall)
        users = [_user_item(item) for item in call.state.items if _is_user(item)]
        return {
            "id": body["id"],
            "object": "response.compaction",
            "created_at": body["created_at"],
            "output": [*users, *body["output"]],
            "usage": body.get("usage"),
        }


def _is_user(item: JsonObject) -> bool:
    return item.get("type", "message") == "message" and item.get("role") == "user"


def _user_item(item: JsonObject) -> JsonObject:
    content = item.get("content")
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    return {"type": "message", "role": "user", "content": content}
