"""Compaction in the Responses format: the `compaction` item a client keeps in place of the conversation it
summarises, and passes back.

Codex compacts a long conversation by sending it with a last `compaction_trigger` item (or to
`POST /v1/responses/compact`), and keeps the one `compaction` item it gets back, opaque, in place of the history.
A Responses upstream compacts itself, and its item goes to the client as it came. For any other upstream the
routed model writes a summary (app/engine/compaction.py), which the gateway seals as the item's
`encrypted_content`; passed back, that item becomes a user turn that says what it is. An upstream's own item
goes back to a Responses upstream as it came; another upstream cannot read it, and is told so in its place.
"""

from __future__ import annotations

import base64
import binascii
import json

from app.common.errors import GatewayError
from app.core.model import JsonObject, Message, Native

SEALED = "toolsift.summary.v1."  # what starts an `encrypted_content` of a compaction the gateway wrote
UNREADABLE = (
    "An earlier part of this conversation was compacted by another service, and its summary cannot be read here."
)
INTRO = "Summary of the earlier part of this conversation, which was compacted:"


def compaction_item(summary: str, ident: str) -> JsonObject:
    text = json.dumps({"summary": summary}, ensure_ascii=False, separators=(",", ":"))
    return {
        "id": ident,
        "type": "compaction",
        "encrypted_content": SEALED + base64.urlsafe_b64encode(text.encode()).decode(),
    }


def compaction_message(item: JsonObject, where: str) -> Message:
    """The user turn a passed-back compaction item becomes: the summary the gateway sealed in it, or, for an
    upstream's own (encrypted) item, the item itself for a Responses upstream and a note for any other."""
    content = item.get("encrypted_content")
    if not isinstance(content, str) or not content.startswith(SEALED):
        return Message("user", UNREADABLE, native=Native("responses", item))
    try:
        found = json.loads(base64.urlsafe_b64decode(content[len(SEALED) :].encode()))
    except (ValueError, binascii.Error, RecursionError):
        found = None
    if not isinstance(found, dict) or not isinstance(found.get("summary"), str):
        raise GatewayError(400, f"Invalid request: '{where}.encrypted_content' is damaged.", param=where)
    return Message("user", f"{INTRO}\n\n{found['summary']}")
