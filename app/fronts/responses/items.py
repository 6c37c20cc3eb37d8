"""The `response` object the Responses front answers with, and what it keeps of one request between its steps;
the items in it are the Responses codec's (`app.codecs.responses.items`)."""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field

from app.codecs.responses.items import incomplete_reason, item_id, usage_json
from app.codecs.responses.protocol import ParsedResponses
from app.common.errors import GatewayError
from app.core.model import JsonObject, StopReason, ToolSpec, Usage
from app.engine.events import DiscoveryStats


@dataclass
class ResponseCall:
    """What the front keeps of one request between its steps (in `Call.state`)."""

    parsed: ParsedResponses
    id: str = field(default_factory=lambda: item_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))
    items: list[JsonObject] = field(default_factory=list)  # the whole conversation's input items, for the store
    tools: list[str] = field(default_factory=list)  # the tools the conversation found before this request
    size: int = 0  # bytes of the conversation's request bodies, roughly: a large one is handled off-loop
    specs: dict[str, ToolSpec] = field(default_factory=dict)  # the client's tools, by the engine's name
    # An upstream's encrypted reasoning the client did not include, by item id: kept for a continuation only.
    unshown: dict[str, str] = field(default_factory=dict)
    unstored: str | None = None  # why the response is not stored although asked to be (the store could not take it)
    compacting: bool = False  # the input ends with a compaction_trigger: the answer is one compaction item
    _numbers: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def sealed_reasoning(self) -> bool:
        """The client asked for reasoning it can pass back (`include: ["reasoning.encrypted_content"]`)."""
        return "reasoning.encrypted_content" in (self.parsed.request.include or ())

    def item_id(self, prefix: str) -> str:
        """An output item's id, which names its response: an `item_reference` to it finds it there."""
        return f"{prefix}_{self.id.removeprefix('resp_')}{next(self._numbers):04x}"

    def shown(self, item: JsonObject, ident: str | None = None) -> JsonObject:
        """A Responses upstream's own item (reasoning, a hosted call) as the client gets it: under an id of this
        response (the upstream stored nothing, so its own ids name nothing), its `encrypted_content` only when the
        client asked for it."""
        prefix = "rs" if item.get("type") == "reasoning" else _prefix(str(item.get("type") or "item"))
        shown = {**item, "id": ident or self.item_id(prefix)}
        if not self.sealed_reasoning and "encrypted_content" in shown and shown["type"] != "compaction":
            self.unshown[shown["id"]] = shown.pop("encrypted_content")
        return shown

    def kept(self, output: list[JsonObject]) -> list[JsonObject]:
        """The output as a continuation (`previous_response_id`) carries it on: the upstream's reasoning whole, as
        OpenAI keeps it for one, whether the client saw its `encrypted_content` or not."""
        if not self.unshown:
            return output
        return [
            {**item, "encrypted_content": self.unshown[item["id"]]} if item.get("id") in self.unshown else item
            for item in output
        ]


def _prefix(kind: str) -> str:
    """An id prefix for an item type, as OpenAI's: `ws` for a `web_search_call`."""
    words = [word for word in kind.split("_") if word.isalpha()]
    return "".join(word[0] for word in words[:-1] or words).lower() or "item"


_ITEM_ID = re.compile(r"^[a-z]+_([0-9a-f]{32})[0-9a-f]{4,}$")


def response_of_item(ident: str) -> str | None:
    """The id of the response whose output holds the item `ident` (an id `ResponseCall.item_id` made)."""
    found = _ITEM_ID.match(ident)
    return f"resp_{found.group(1)}" if found else None


def response_json(
    state: ResponseCall,
    model: str,
    output: list[JsonObject],
    status: str,
    usage: Usage | None = None,
    discovery: DiscoveryStats | None = None,
    error: GatewayError | None = None,
    stop: StopReason | None = None,
) -> JsonObject:
    """The `response` object: the request's own settings echoed, as OpenAI's is."""
    request = state.parsed.request
    reason = incomplete_reason(stop)
    if reason is not None and status == "completed":
        status = "incomplete"
    text = request.text.model_dump(by_alias=True, exclude_none=True) if request.text is not None else {}
    body: JsonObject = {
        "id": state.id,
        "object": "response",
        "created_at": state.created_at,
        "status": status,
        "error": {"code": error.code or error.type, "message": error.message} if error is not None else None,
        "incomplete_details": {"reason": reason} if status == "incomplete" else None,
        "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens,
        "model": model,
        "output": output,
        "parallel_tool_calls": request.parallel_tool_calls is not False,
        "previous_response_id": request.previous_response_id,
        "reasoning": {
            "effort": request.reasoning.effort if request.reasoning else None,
            "summary": request.reasoning.summary if request.reasoning else None,
        },
        "store": request.store is not False and state.unstored is None,
        "temperature": request.temperature,
        "text": {"format": {"type": "text"}, **text},
        "tool_choice": request.tool_choice or "auto",
        "tools": request.tools or [],
        "top_p": request.top_p,
        "truncation": "disabled",
        "usage": usage_json(usage),
        "user": request.user,
        "metadata": request.metadata or {},
    }
    if discovery is not None:
        body["tool_discovery"] = discovery.as_json()
    return body
