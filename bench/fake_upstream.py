"""A fast, stateless OpenAI-compatible upstream for the benches, run as its own process.

`discovery` model: answers from the conversation alone, so any number of concurrent conversations work: a user
turn gets a `search_tools` call, a search result gets a call to the currency tool it found, a tool result
gets the answer. Any other model answers at once (pass-through). Streams when asked, with usage.

    python bench/fake_upstream.py PORT
"""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn

BASE = {"id": "chatcmpl-bench", "created": 1, "model": "bench-model"}
USAGE = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}


def reply_for(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if body.get("model") != "discovery" or (last.get("role") == "tool" and "Found" not in str(last.get("content"))):
        return {"role": "assistant", "content": "100 US dollars are about 92 euros today."}
    if last.get("role") == "tool":
        arguments = json.dumps({"amount": 100, "from_currency": "USD", "to_currency": "EUR"})
        return _call("finance__convert_currency", arguments)
    return _call("search_tools", json.dumps({"query": "convert currency"}))


def _call(name: str, arguments: str) -> dict[str, Any]:
    call = {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = json.loads(b"".join(chunks) or b"{}")
    message = reply_for(body)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    if not body.get("stream"):
        completion = {**BASE, "object": "chat.completion", "usage": USAGE,
                      "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(completion).encode()})
        return
    head = {**BASE, "object": "chat.completion.chunk"}
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    parts = [_event({**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
    if message.get("content"):
        for word in message["content"].split(" "):
            parts.append(_event({**head, "choices": [{"index": 0, "delta": {"content": word + " "}}]}))
    for index, call in enumerate(message.get("tool_calls") or []):
        parts.append(_event({**head, "choices": [{"index": 0, "delta": {"tool_calls": [{**call, "index": index}]}}]}))
    parts.append(_event({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    parts.append(_event({**head, "choices": [], "usage": USAGE}))
    for part in parts:
        await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
