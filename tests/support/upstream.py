"""A scripted OpenAI-compatible upstream in memory (respx at the httpx client level), and the SSE it streams."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import respx

from tests.support.gateway import UPSTREAM


def completion(
    content: str | None = None,
    calls: list[tuple[str, Any]] | None = None,
    usage: tuple[int, int] | None = (10, 5),
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """An OpenAI chat.completion; `calls` are (name, arguments) with arguments a dict or a raw string."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for index, (name, args) in enumerate(calls)
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test-mini-2025",
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


class Upstream:
    """A scripted upstream: answers each call with the next reply and records what it was sent."""

    def __init__(self, router: respx.MockRouter) -> None:
        self.router = router
        self.replies: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []
        self.route = router.post(f"{UPSTREAM}/chat/completions").mock(side_effect=self._answer)

    def script(self, *replies: Any) -> None:
        self.replies.extend(replies)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        self.headers.append(request.headers)
        reply = self.replies.pop(0) if self.replies else completion("(script exhausted)")
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        return httpx.Response(200, json=reply)

    def tool_names(self, call: int) -> list[str]:
        return [tool["function"]["name"] for tool in self.requests[call].get("tools", [])]


@contextlib.contextmanager
def mock_upstreams() -> Iterator[respx.MockRouter]:
    """respx at the httpx client level, where the providers' own transport sits; the test client reaching the
    gateway in memory (host `gw`) passes through."""
    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="gw").pass_through()
        yield router


FIRST_CHUNK = (
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
)


def sse_reply(
    content: list[str] | None = None,
    calls: list[tuple[str, Any]] | None = None,
    usage: tuple[int, int] | None = None,
    fragment: int = 4,
    interleave: bool = False,
    finish: str | None = None,
) -> httpx.Response:
    """An upstream SSE response: content deltas, then tool-call deltas cut into `fragment`-sized pieces."""
    base = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "up-model"}
    chunks: list[dict[str, Any]] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    chunks += [{**base, "choices": [{"index": 0, "delta": {"content": text}}]} for text in content or []]
    pieces: list[list[dict[str, Any]]] = []
    for index, (name, args) in enumerate(calls or []):
        arguments = args if isinstance(args, str) else json.dumps(args)
        head = {"index": index, "id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": ""}}
        parts = [arguments[i : i + fragment] for i in range(0, len(arguments), fragment)]
        pieces.append([head] + [{"index": index, "function": {"arguments": part}} for part in parts])
    if interleave:
        ordered = [piece for group in _zip_longest(pieces) for piece in group]
    else:
        ordered = [piece for group in pieces for piece in group]
    chunks += [{**base, "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]} for piece in ordered]
    reason = finish or ("tool_calls" if calls else "stop")
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    if usage:
        chunks.append(
            {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
            }
        )
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


def _zip_longest(groups: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    longest = max((len(group) for group in groups), default=0)
    return [[group[i] for group in groups if i < len(group)] for i in range(longest)]


def events(text: str) -> list[Any]:
    """The data events of an SSE body, JSON-decoded ("[DONE]" stays a string)."""
    out: list[Any] = []
    for block in text.split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: "):
                data = line[6:]
                out.append(data if data == "[DONE]" else json.loads(data))
    return out


def content_of(items: list[Any]) -> str:
    return "".join(
        choice["delta"].get("content") or ""
        for item in items
        if isinstance(item, dict) and "choices" in item
        for choice in item["choices"]
    )


def finish_reasons(items: list[Any]) -> list[str]:
    return [
        c["finish_reason"] for i in items if isinstance(i, dict) for c in i.get("choices", []) if c["finish_reason"]
    ]
