"""Hostile clients, models and upstreams against a running gateway: every probe must end in a clear refusal or
error within its time bound, without blocking `/healthz` and without growing the gateway's memory.

Starts `toolsift serve` (the demo's MCP servers, discovery and prefetch on, `request_deadline` 5 s, client
timeouts 2 s / 3 s) in its own process, with a scripted upstream in this process whose behaviour is chosen by the
request's model name. Another process polls `/healthz` every 20 ms. One row per probe; the exit status is
non-zero if any row fails.

    python bench/abuse.py [--only WORD] [--no-record] [--out NAME]

`--only "bounded work"` runs the rows of deferred client tools, list_changed storms and the 10,000-tool catalog,
and the cache of client-tool indexes against its byte bound (`--only "lists of"` those two rows alone);
`--only "server messages"` the rows of what MCP servers send beside their answers (long log messages, an event
flood, stderr) and the 5,000-tool listing with the search model on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import add_record_options, demo_config, free_port, machine, record, start_gateway, wait_until_up

from app.discovery.index import describe_locations

SECRET = "sk-abuse-bench-7f3c9e1d5b"  # the upstream key: no answer may contain it
URL_SECRET = "urltoken-abuse-4e8a2c"  # a credential inside a provider's base_url
DEADLINE, HEADER_TIMEOUT, BODY_TIMEOUT = 5.0, 2.0, 3.0
HEALTHZ_MS, MEMORY_MB, BIG_MEMORY_MB, RESULT_CHARS = 100.0, 20.0, 64.0, 20_000
CHAT = "/v1/chat/completions"
JSON = {"content-type": "application/json"}
HUGE_TEXT = "-" * 40_000 + " " + "y" * 1_000_000
# Text the search index reads for paths and URLs: runs of dashes once made its regex quadratic (20,000 characters
# took seconds, 40,000 half a minute). Queries reach it cut to 2,000 characters, tool descriptions do not.
DASHES, WORD_DASHES = "-" * 40_000 + " x", "a-" * 20_000 + "/" + "-" * 20_000
PLAIN = json.dumps({"model": "plain", "messages": [{"role": "user", "content": "hi"}]})

# What a hostile model calls (tool name, raw arguments), by model name.
CALLS: dict[str, tuple[str, str]] = {
    "search-dashes": ("search_tools", json.dumps({"query": "-" * 40_000})),
    "search-word-dashes": ("search_tools", json.dumps({"query": "a-" * 20_000 + "/" + "-" * 20_000})),
    "search-names": ("search_tools", json.dumps({"tool_names": [f"missing_tool_{i}" for i in range(10_000)]})),
    "search-select": ("search_tools", json.dumps({"query": "select:" + ",".join(f"t_{i}" for i in range(300_000))})),
    "search-1mb": ("search_tools", json.dumps({"query": "weather forecast " * 62_000})),
    "search-sentences": ("search_tools", json.dumps({"query": "Find the weather. " * 60_000})),
    "long-name": ("x" * 100_000, "{}"),
    "nested-arguments": ("weather__get_current_weather", "[" * 100_000),
    "huge-arguments": ("weather__get_current_weather", json.dumps({"city": "y" * 1_000_000})),
}
# Answers an OpenAI client could not read; each must become a 502 naming what was wrong (streamed: as deltas).
MALFORMED: list[dict[str, Any]] = [
    {"choices": ["x"]},
    {"choices": [None]},
    {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": "abc"}}]},
    {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [{"id": "1", "function": "x"}]}}]},
]


def _event(data: Any) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _completion(message: dict[str, Any]) -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
    return json.dumps(
        {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
    ).encode()


def _call(name: str, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": "s", "type": "function", "function": function}]}


class Upstream:
    """The scripted upstream (raw ASGI): counts the requests it holds open, records the tool results it is sent."""

    def __init__(self) -> None:
        self.open = 0
        self.tool_result_chars: dict[str, int] = {}
        self.tool_results: dict[str, str] = {}  # the start of each
        self.calls = {model: _completion(_call(*call)) for model, call in CALLS.items()}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = [await receive()]
        while chunks[-1].get("more_body"):
            chunks.append(await receive())
        request = json.loads(b"".join(chunk.get("body", b"") for chunk in chunks))
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        self.open += 1
        try:
            await self.answer(request, auth, receive, send)
        finally:
            self.open -= 1

    async def answer(self, request: dict[str, Any], auth: str, receive: Any, send: Any) -> None:
        model, last = request["model"], request["messages"][-1]
        if last.get("role") == "tool":
            self.tool_result_chars[model] = len(str(last.get("content")))
            self.tool_results[model] = str(last.get("content"))[:1000]
            await _send(send, 200, _completion({"role": "assistant", "content": "done"}))
        elif model in self.calls:
            await _send(send, 200, self.calls[model])
        elif model == "discover":
            await _send(send, 200, _completion(_call("search_tools", json.dumps({"query": "weather forecast"}))))
        elif model == "echo-401":
            await _send(send, 401, json.dumps({"error": {"message": f"Incorrect API key provided: {auth}"}}).encode())
        elif model == "echo-text":
            await _send(send, 500, f"upstream broke; it was called with {auth}".encode(), b"text/plain")
        elif model == "echo-midstream":
            error = {"error": {"message": f"quota exceeded for {auth.removeprefix('Bearer ')}", "type": "x"}}
            choice = {"index": 0, "delta": {"role": "assistant", "content": "Hi"}}
            await _stream(send, [_event({"object": "chat.completion.chunk", "choices": [choice]}), _event(error)])
        elif model.startswith("malformed-"):
            shape = MALFORMED[int(model.removeprefix("malformed-"))]
            if not request.get("stream"):
                await _send(send, 200, json.dumps(shape).encode())
            else:
                chunk = json.loads(json.dumps(shape).replace('"message"', '"delta"'))
                await _stream(send, [_event({"id": "c", "object": "chat.completion.chunk", **chunk})])
        elif model == "huge":
            await _send(send, 200, _completion({"role": "assistant", "content": "x" * 20_000_000}))
        elif model == "huge-line":
            await _stream(send, [b"data: " + b"x" * 20_000_000])
        elif model in ("comments", "slow-stream", "hang"):
            await _dawdle(model, receive, send)
        else:
            await _send(send, 200, _completion({"role": "assistant", "content": "ok"}))


async def _send(send: Any, status: int, body: bytes, kind: bytes = b"application/json") -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
    await send({"type": "http.response.body", "body": body})


async def _stream(send: Any, events: list[bytes]) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    for event in events:
        await send({"type": "http.response.body", "body": event, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _dawdle(model: str, receive: Any, send: Any) -> None:
    """Until the gateway hangs up: nothing (`hang`), SSE comments only, or a word every half second."""
    gone = asyncio.ensure_future(receive())  # the body was read: the next message is http.disconnect
    if model != "hang":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    word = _event({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "word "}}]})
    while not gone.done():
        if model != "hang":
            body = b": still thinking\n\n" if model == "comments" else word
            await send({"type": "http.response.body", "body": body, "more_body": True})
        await asyncio.wait([gone], timeout=0.5)


@dataclass
class Result:
    status: str
    problems: list[str] = field(default_factory=list)

    def expect(self, condition: bool, problem: str) -> Result:
        if not condition and problem not in self.problems:
            self.problems.append(problem)
        return self


def judged(outcomes: list[tuple[int, str]], status: int, code: str = "") -> Result:
    """Every (status, text) must have `status` (and the error `code`); no text may carry a secret."""
    shown = sorted({str(got) for got, _ in outcomes})
    result = Result("/".join(shown) + (f" x{len(outcomes)}" if len(outcomes) > 1 else ""))
    for got, text in outcomes:
        result.expect(got == status, f"{got}: {text[:100]}")
        result.expect(code in text, f"no {code}: {text[:100]}")
        result.expect(SECRET not in text and URL_SECRET not in text, "SECRET LEAKED")
    return result


@dataclass
class Bench:
    http: httpx.AsyncClient
    upstream: Upstream
    port: int

    async def post(self, content: str, path: str = CHAT, **headers: str) -> tuple[int, str]:
        response = await self.http.post(path, content=content, headers={**JSON, **headers})
        return response.status_code, response.text

    async def chat(self, model: str, text: str = "go") -> tuple[int, str]:
        return await self.post(json.dumps({"model": model, "messages": [{"role": "user", "content": text}]}))

    async def stream(self, model: str, leave: Callable[[str], bool] = lambda text: False) -> tuple[int, str]:
        """Status and text of a streamed chat; the client hangs up as soon as `leave(text so far)`."""
        body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "go"}]}
        text = ""
        async with self.http.stream("POST", CHAT, json=body) as response:
            async for piece in response.aiter_text():
                text += piece
                if leave(text):
                    break
        return response.status_code, text

    async def expect(self, requests: list[Awaitable[tuple[int, str]]], status: int, code: str = "") -> Result:
        return judged([await request for request in requests], status, code)

    async def tool_call(self, model: str) -> Result:
        result = judged([await self.chat(model)], 200)
        chars = self.upstream.tool_result_chars.get(model, -1)
        result.status += f", result {chars:,} chars"
        return result.expect(0 < chars <= RESULT_CHARS, f"tool result of {chars:,} chars")

    async def mcp_search(self) -> Result:
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{self.port}/mcp"), timeout=30) as client:
            answer = await client.call_tool("search_tools", {"query": HUGE_TEXT})
        chars = sum(len(getattr(part, "text", "")) for part in answer.content)
        return Result(f"result {chars:,} chars").expect(0 < chars <= RESULT_CHARS, f"result of {chars:,} chars")

    async def echo_streamed(self) -> Result:
        early, late = await self.stream("echo-401"), await self.stream("echo-midstream")
        result = judged([early], 401).expect(SECRET not in late[1], "SECRET LEAKED")
        result.status += f" / {late[0]}+error event"
        return result.expect('"error"' in late[1], "no error event")

    async def malformed(self, streamed: bool) -> Result:
        """502 `upstream_invalid_response`; streamed, an error event after the first byte counts as well."""
        models = [f"malformed-{i}" for i in range(len(MALFORMED))]
        if not streamed:
            return await self.expect([self.chat(model) for model in models], 502, "upstream_invalid_response")
        outcomes = [await self.stream(model) for model in models]
        result = judged(
            [(502 if got == 200 else got, text) for got, text in outcomes], 502, "upstream_invalid_response"
        )
        result.status = " ".join(f"{got}+event" if got == 200 else str(got) for got, _ in outcomes)
        return result

    async def huge_line(self) -> Result:
        status, text = await self.stream("huge-line")
        result = judged([(502 if status == 200 else status, text)], 502, "error")
        result.status = f"{status}" + ("+error event" if status == 200 and "error" in text else "")
        return result

    async def deadline_streamed(self) -> Result:
        status, text = await self.stream("comments")
        keepalives = text.count(": keep-alive")
        result = judged([(status, text)], 200, "request_deadline")
        result.status += f"+request_deadline, {keepalives} keep-alives"
        return result.expect(keepalives >= DEADLINE - 2, "keep-alives missing")

    async def give_up(self, model: str, clients: int = 30) -> Result:
        request = self.chat if model == "hang" else self.stream
        waits = [asyncio.wait_for(request(model), 1.5) for _ in range(clients)]
        outcomes = await asyncio.gather(*waits, return_exceptions=True)
        gone = sum(isinstance(outcome, TimeoutError) for outcome in outcomes)
        return Result(f"{gone}/{clients} left at 1.5 s").expect(gone == clients, "some did not wait")

    async def leave_midstream(self, clients: int = 30) -> Result:
        outcomes = await asyncio.gather(*(self.stream("slow-stream", lambda t: "word" in t) for _ in range(clients)))
        return Result(f"{clients} left after a chunk").expect(all(s == 200 for s, _ in outcomes), "not 200")

    async def bad_json(self) -> Result:
        start = PLAIN.removesuffix("}")
        bodies = [
            start + ', "metadata": ' + "[" * 5000 + "]" * 5000 + "}",
            start + ', "max_tokens": ' + "7" * 5000 + "}",
            start + ', "temperature": NaN}',
            start + ', "temperature": Infinity}',
            start + ', "top_p": 1e999}',
            start + ', "tools": [{"type": "function", "function": {"name": "t"}, "defer_loading": "yes"}]}',
            start.replace('"hi"', '"\\ud800"') + "}",
            start + ', "stream": true, "stream_options": "x"}',
            start + ', "n": 2}',
        ]
        return await self.expect([self.post(body) for body in bodies], 400, "invalid_request_error")

    async def big_body(self) -> Result:
        messages = [{"role": "user", "content": f"{i} " + "z" * 8000} for i in range(2000)]
        return await self.expect([self.post(json.dumps({"model": "plain", "messages": messages}))], 200)

    async def session_ids(self, count: int, length: int, status: int) -> Result:
        discover = json.dumps({"model": "discover", "messages": [{"role": "user", "content": "go"}]})
        ids = [f"{i:04d}".ljust(length, "s") for i in range(count)]
        return await self.expect([self.post(discover, **{"x-session-id": i}) for i in ids], status)

    async def slow_clients(self, body: bool, clients: int = 50) -> Result:
        host = f"Host: 127.0.0.1:{self.port}\r\n".encode()
        head, tail = b"", b"GET /healthz HTTP/1.1\r\n" + host + b"X-Pad: " + b"a" * 10_000
        if body:
            head = b"POST /v1/chat/completions HTTP/1.1\r\n" + host + b"Content-Type: application/json\r\n"
            head, tail = head + b"Content-Length: 10000\r\n\r\n", b"{" + b" " * 9999
        answers = await asyncio.gather(*(drip(self.port, head, tail) for _ in range(clients)))
        lines = sorted({line for line, _ in answers})
        result = Result(f"{', '.join(lines)}; all closed by {max(t for _, t in answers):.1f} s")
        # A reset is a close too: a client still sending when the gateway closes may get RST before the 408.
        return result.expect(all(" 408 " in line or line == "ConnectionResetError" for line in lines), "not closed")


async def drip(port: int, head: bytes, tail: bytes) -> tuple[str, float]:
    """Send `head`, then `tail` a byte every 50 ms; the first line answered, and when the gateway hung up."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()

    async def dribble() -> None:
        writer.write(head)
        for byte in tail:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.05)

    dribbler = asyncio.ensure_future(dribble())
    try:
        answer = await asyncio.wait_for(reader.read(), 30)
    except (ConnectionError, TimeoutError) as exc:
        answer = type(exc).__name__.encode()
    dribbler.cancel()
    writer.close()
    return answer.split(b"\r\n")[0].decode(errors="replace"), time.monotonic() - started


async def index_reads(text: str) -> Result:
    """The search index's reading of hostile text, in this process (its cost is the row's time): nothing in it is a
    path or a URL, so it must come back unchanged."""
    described = describe_locations(text)
    return Result(f"{len(described):,} chars").expect(described == text, "text without a path or URL was changed")


Probe = tuple[str, float, Callable[[], Awaitable[Result]]]


# -- bounded rules: fan-out model replies and schema patterns that would backtrack ------------------------------

# An MCP server whose tool schema holds a catastrophic-backtracking `pattern`, for the MCP front's proxy `call_tool`.
HOSTILE_SCHEMA_SERVER = """
from typing import Annotated
from fastmcp import FastMCP
from pydantic import Field

mcp = FastMCP("hostile")


@mcp.tool
def lookup_code(code: Annotated[str, Field(json_schema_extra={"pattern": r"^(a+)+$"})]) -> str:
    \"\"\"Look up a product code.\"\"\"
    return code


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
"""


def _fan_out(calls: list[tuple[str, str]]) -> bytes:
    tool_calls = [
        {"id": f"f{index}", "type": "function", "function": {"name": name, "arguments": arguments}}
        for index, (name, arguments) in enumerate(calls)
    ]
    return _completion({"role": "assistant", "content": None, "tool_calls": tool_calls})


FAN_OUT: dict[str, bytes] = {
    "fan-out-search": _fan_out(
        [("search_tools", json.dumps({"query": " ".join(f"w{i}x{j}" for j in range(300))})) for i in range(300)]
    ),
    "fan-out-mcp": _fan_out([("weather__get_current_weather", json.dumps({"city": "Paris"}))] * 500),
}


async def fan_out(bench: Bench, model: str) -> Result:
    """One reply asks for hundreds of calls: a 200 in bounded time, the calls past the cap answered as errors."""
    bench.upstream.calls[model] = FAN_OUT[model]
    return await bench.tool_call(model)


async def schema_redos() -> Result:
    """`call_tool` on the stdio MCP front (proxy mode) with 60 characters against `^(a+)+$`: 2^60 steps on a
    backtracking engine; the answer must be an argument error at once."""
    from fastmcp.client.transports import StdioTransport

    workdir = Path(tempfile.mkdtemp(prefix="toolsift-redos-"))
    (workdir / "hostile.py").write_text(HOSTILE_SCHEMA_SERVER)
    server = {"command": sys.executable, "args": [str(workdir / "hostile.py")], "defer_loading": True}
    config = {"mcpServers": {"hostile": server}, "tool_discovery": {"semantic": {"enabled": False}}}
    (workdir / "config.json").write_text(json.dumps(config))
    toolsift = str(Path(sys.executable).parent / "toolsift")
    command = ["mcp", "--stdio", "--config", str(workdir / "config.json"), "--mode", "proxy"]
    transport = StdioTransport(toolsift, command, env=dict(os.environ))
    async with Client(transport, timeout=30, init_timeout=60) as client:
        started = time.monotonic()
        arguments = {"name": "hostile__lookup_code", "arguments": {"code": "a" * 60 + "!"}}
        answer = await client.call_tool_mcp("call_tool", arguments)
        seconds = time.monotonic() - started
    text = "".join(getattr(part, "text", "") for part in answer.content)
    result = Result(f"{'error' if answer.is_error else 'ran'} in {seconds * 1000:.0f} ms")
    result.expect(answer.is_error and "does not match" in text, f"not refused: {text[:100]}")
    return result.expect(seconds < 1, f"call_tool took {seconds:.1f} s")


def bound_rules_probes(bench: Bench) -> list[Probe]:
    return [
        ("model: one reply of 300 long distinct searches", 5, lambda: fan_out(bench, "fan-out-search")),
        ("model: one reply of 500 MCP calls", 5, lambda: fan_out(bench, "fan-out-mcp")),
        ("/mcp proxy: call_tool against ^(a+)+$ (stdio)", 60, schema_redos),
    ]


# -- end of bounded rules --------------------------------------------------------------------------------------


def probes(bench: Bench) -> list[Probe]:
    """Name, time bound in seconds, probe."""
    b, evil, rebound = bench, "https://evil.example", f"evil.example:{bench.port}"

    def refuse(
        status: int, code: str, body: str, path: str, headers: dict[str, str]
    ) -> Callable[[], Awaitable[Result]]:
        return lambda: b.expect([b.post(body, path, **headers)], status, code)

    return [
        ("model: search query of 40,000 '-'", 5, lambda: b.tool_call("search-dashes")),
        ("model: search query 'a-' x 20,000 + '/-...'", 5, lambda: b.tool_call("search-word-dashes")),
        ("index: 40,000 '-' + ' x' read for paths", 2, lambda: index_reads(DASHES)),
        ("index: 'a-' x 20,000 + '/' + '-' x 20,000 read", 2, lambda: index_reads(WORD_DASHES)),
        ("model: search with 10,000 tool_names", 5, lambda: b.tool_call("search-names")),
        ("model: search 'select:' + 300,000 names", 5, lambda: b.tool_call("search-select")),
        ("model: search query of 1 MB", 5, lambda: b.tool_call("search-1mb")),
        ("model: search query of 60,000 sentences", 5, lambda: b.tool_call("search-sentences")),
        ("model: calls a 100,000-char tool name", 5, lambda: b.tool_call("long-name")),
        ("model: tool arguments '[' x 100,000", 5, lambda: b.tool_call("nested-arguments")),
        ("model: weather call with a 1 MB city", 5, lambda: b.tool_call("huge-arguments")),
        ("/mcp: search_tools query of 1 MB", 5, b.mcp_search),
        ("prefetch: user message 40,000 '-' + 1 MB", 3, lambda: b.expect([b.chat("plain", HUGE_TEXT)], 200)),
        ("client: 2,000 messages of 8 KB (16 MB)", 5, b.big_body),
        ("upstream: echoes the key (401)", 2, lambda: b.expect([b.chat("echo-401")], 401)),
        ("upstream: echoes the key (text 500)", 2, lambda: b.expect([b.chat("echo-text")], 500)),
        ("upstream: echoes the key, streamed", 2, b.echo_streamed),
        ("upstream: key in base_url, unreachable", 2, lambda: b.expect([b.chat("leaky-url")], 502)),
        ("upstream: 4 malformed answers", 2, lambda: b.malformed(False)),
        ("upstream: 4 malformed answers, streamed", 2, lambda: b.malformed(True)),
        ("upstream: 20 MB answer", 5, lambda: b.expect([b.chat("huge")], 502, "upstream_response_too_large")),
        ("upstream: 20 MB SSE line, streamed", 5, b.huge_line),
        ("upstream: only SSE comments, streamed", DEADLINE + 2, b.deadline_streamed),
        ("upstream: never answers, plain", DEADLINE + 2, lambda: b.expect([b.chat("hang")], 504, "request_deadline")),
        ("client: 30 give up on a hanging upstream", 3, lambda: b.give_up("hang")),
        ("client: 30 give up on SSE comments", 3, lambda: b.give_up("comments")),
        ("client: 30 leave mid-stream", 3, b.leave_midstream),
        (
            "client: text/plain body",
            1,
            refuse(415, "unsupported_media_type", PLAIN, CHAT, {"content-type": "text/plain"}),
        ),
        ("client: foreign Origin (chat)", 1, refuse(403, "origin_not_allowed", PLAIN, CHAT, {"origin": evil})),
        ("client: foreign Origin (/mcp)", 1, refuse(403, '"jsonrpc"', "{}", "/mcp", {"origin": evil})),
        ("client: rebound Host (chat)", 1, refuse(403, "host_not_allowed", PLAIN, CHAT, {"host": rebound})),
        ("client: rebound Host (/mcp)", 1, refuse(403, '"jsonrpc"', "{}", "/mcp", {"host": rebound})),
        ("client: 9 bad bodies (depth, 5,000 digits, NaN, ...)", 2, b.bad_json),
        ("client: 50 x 1 MB X-Session-Id", 5, lambda: b.session_ids(50, 1_000_000, 400)),
        ("client: 300 unique 256-char session ids", 20, lambda: b.session_ids(300, 256, 200)),
        ("client: 50 send headers a byte at a time", HEADER_TIMEOUT + 2, lambda: b.slow_clients(False)),
        ("client: 50 send a body a byte at a time", BODY_TIMEOUT + 2, lambda: b.slow_clients(True)),
        *bound_rules_probes(b),
        *bounded_work_probes(b),
    ]


# ---- Bounded work: deferred client tools indexed per request, MCP list_changed storms, a 10,000-tool catalog ----
# Kept together so other probe blocks merge beside it. Client-tool rows run against the main gateway; the catalog
# rows start a gateway of their own on bench/hostile_mcp.py (10,000 generated tools, `storm` adds tools and
# announces each), without the search model, so its figures are the catalog, index and manifest alone.

CLIENT_TOOLS, CATALOG_TOOLS, STORM = 512, 10_000, 50
CATALOG_START_S, CATALOG_MEMORY_MB = 60.0, 1024.0
CALLS["storm"] = ("big__storm", json.dumps({"count": STORM}))
BOUNDED = "bounded work"  # --only "bounded work" runs this block's rows alone
CATALOG_ROWS = f"MCP: {CATALOG_TOOLS:,}-tool catalog starts / MCP: {STORM} list_changed on {CATALOG_TOOLS:,} tools"


def _made_up(i: int) -> str:
    """About 9 KB of words no other tool has: 512 of them are the 4.7 MB that stalled the gateway 17 s."""
    return f"Tool {i}. " + " ".join(f"q{i}w{j}zx" for j in range(900))


def client_tools_body(front: str) -> tuple[str, str]:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    if front == "chat":
        tools: list[dict[str, Any]] = [
            {"type": "function", "defer_loading": True,
             "function": {"name": f"t{i}", "description": _made_up(i), "parameters": schema}}
            for i in range(CLIENT_TOOLS)
        ]  # fmt: skip
        return CHAT, json.dumps({"model": "plain", "messages": [{"role": "user", "content": "hi"}], "tools": tools})
    if front == "responses":
        tools = [
            {"type": "function", "name": f"t{i}", "description": _made_up(i), "parameters": schema,
             "defer_loading": True}
            for i in range(CLIENT_TOOLS)
        ]  # fmt: skip
        return "/v1/responses", json.dumps({"model": "plain", "input": "hi", "tools": tools})
    tools = [
        {"name": f"t{i}", "description": _made_up(i), "input_schema": schema, "defer_loading": True}
        for i in range(CLIENT_TOOLS)
    ]
    body = {"model": "plain", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    return "/v1/messages", json.dumps(body)


def bounded_work_probes(bench: Bench) -> list[Probe]:
    def client_tools(front: str) -> Callable[[], Awaitable[Result]]:
        path, body = client_tools_body(front)
        return lambda: bench.expect([bench.post(body, path)], 200)

    return [
        (f"client: {CLIENT_TOOLS} deferred tools of 9 KB (4.7 MB), {front}", 10, client_tools(front))
        for front in ("chat", "responses", "messages")
    ]


def catalog_config(upstream_port: int) -> dict[str, Any]:
    server = Path(__file__).resolve().parent / "hostile_mcp.py"
    big = {
        "command": sys.executable, "args": [str(server)], "env": {"TOOLS": str(CATALOG_TOOLS)},
        "defer_loading": True, "always_load": ["storm"], "startup_timeout": 120,
    }  # fmt: skip
    return {
        "providers": {"hostile": {"base_url": f"http://127.0.0.1:{upstream_port}/v1", "api_key": SECRET}},
        "mcpServers": {"big": big},
        "mcp_limits": {"max_tools_per_server": 2 * CATALOG_TOOLS},
        "tool_discovery": {"semantic": {"enabled": False}},
    }


async def _big_tools(http: httpx.AsyncClient) -> int:
    try:
        server = (await http.get("/healthz", timeout=1)).json()["servers"]["big"]
    except (httpx.HTTPError, ValueError, KeyError):
        return -1
    return int(server["tools"]) if server["state"] == "up" else -1


async def catalog_rows(upstream_port: int, log_dir: Path) -> list[list[str]]:
    """A gateway on a 10,000-tool server: how long until it serves them and what it holds; then a storm of
    list_changed (the server adds 50 tools, announcing each) while /healthz is polled."""
    port = free_port()
    with (log_dir / "catalog-gateway.log").open("w") as log:
        started = time.monotonic()
        gateway, _ = start_gateway(catalog_config(upstream_port), port, dict(os.environ), log)
    rows: list[list[str]] = []
    poller: HealthPoller | None = None
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            while await _big_tools(http) < CATALOG_TOOLS - 1:  # every generated tool but `storm`, always loaded
                if gateway.poll() is not None or time.monotonic() - started > 300:
                    raise SystemExit("the catalog gateway did not start")
                await asyncio.sleep(0.1)
            elapsed, rss = time.monotonic() - started, rss_mb(gateway.pid)
            poller = HealthPoller(port)
            await asyncio.sleep(1.0)
            worst, _ = await poller.worst(started + elapsed, time.monotonic())
            result = Result(f"{CATALOG_TOOLS:,} tools")
            result.expect(elapsed <= CATALOG_START_S, f"took {elapsed:.0f} s > {CATALOG_START_S:g} s")
            result.expect(rss <= CATALOG_MEMORY_MB, f"RSS {rss:.0f} MB > {CATALOG_MEMORY_MB:g} MB")
            rows.append(_row(f"MCP: {CATALOG_TOOLS:,}-tool catalog starts", result, elapsed, worst, 0.0, rss))
            bench = Bench(http, Upstream(), port)
            before, begun = rss_mb(gateway.pid), time.monotonic()
            status, text = await bench.chat("storm")
            while await _big_tools(http) < CATALOG_TOOLS - 1 + STORM:
                if time.monotonic() - begun > 120:
                    break
                await asyncio.sleep(0.1)
            took = time.monotonic() - begun
            worst, answered = await poller.worst(begun, begun + took)
            result = judged([(status, text)], 200)
            result.status += f", {await _big_tools(http):,} tools after"
            result.expect(answered, "/healthz did not answer 200").expect(took <= 30, f"took {took:.0f} s > 30 s")
            result.expect(worst * 1000 <= HEALTHZ_MS, f"/healthz took {worst * 1000:.0f} ms")
            name = f"MCP: {STORM} list_changed on {CATALOG_TOOLS:,} tools"
            rows.append(_row(name, result, took, worst, before, rss_mb(gateway.pid)))
    finally:
        if poller is not None:
            poller.close()
        gateway.terminate()
        gateway.wait(15)
    return rows


def _row(name: str, result: Result, elapsed: float, worst: float, before: float, after: float) -> list[str]:
    verdict = "FAIL: " + "; ".join(result.problems) if result.problems else "ok"
    return [name, result.status, f"{elapsed:.2f}", f"{worst * 1000:.0f}", f"{before:.0f} -> {after:.0f}", verdict]


# ---- end of the bounded-work block ----


# ---- Client-tool index in real bytes: lists of deferred tools in Cyrillic against the cache's byte bound ----
# Gateways of their own (the cache at the default 64 MiB, no search model), sent distinct lists of deferred tools in
# Cyrillic (2 bytes a character in a Python text): 1 MB lists with no MCP server, then small lists beside the
# 10,000-tool server, where each cached list also holds its copy of the catalog's tables by name. What the cache
# holds must stay within 1.5 times its bound.

CYRILLIC_LISTS, CYRILLIC_TOOLS, CYRILLIC_WORDS, CYRILLIC_CACHE_MB = 80, 100, 50, 64
SMALL_LISTS = 150
CYRILLIC_ROWS = (
    f"client: {CYRILLIC_LISTS} lists of 1 MB Cyrillic deferred tools, cache {CYRILLIC_CACHE_MB} MiB",
    f"client: {SMALL_LISTS} lists of 2 small Cyrillic tools beside {CATALOG_TOOLS:,} MCP tools, cache "
    f"{CYRILLIC_CACHE_MB} MiB",
)
_CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"


def cyrillic_body(seed: int, tools: int = CYRILLIC_TOOLS, words_each: int = 640) -> str:
    """Cyrillic descriptions over a vocabulary of CYRILLIC_WORDS words, as a real tool list repeats its words
    (100 tools of 640 words: about 1 MB in UTF-8); each seed a distinct list, so each is indexed and cached anew."""
    letters = [_CYRILLIC[(seed * 7 + i * 13) % len(_CYRILLIC)] for i in range(4096)]
    words = ["".join(letters[(i * 31 + j) % 4096] for j in range(4 + i % 7)) for i in range(CYRILLIC_WORDS)]
    listed = [
        {"type": "function", "defer_loading": True,
         "function": {"name": f"s{seed}_t{i}", "parameters": {"type": "object"},
                      "description": " ".join(words[(i * 97 + j * 7) % CYRILLIC_WORDS] for j in range(words_each))}}
        for i in range(tools)
    ]  # fmt: skip
    return json.dumps({"model": "plain", "messages": [{"role": "user", "content": "hi"}], "tools": listed})


async def cyrillic_rows(upstream_port: int, log_dir: Path, only: str) -> list[list[str]]:
    """Each row's RSS before and after its lists, against 1.5 times the cache's bound; /healthz polled."""
    cache = {"client_index_cache_mb": CYRILLIC_CACHE_MB, "semantic": {"enabled": False}}
    alone = {
        "providers": {"hostile": {"base_url": f"http://127.0.0.1:{upstream_port}/v1", "api_key": SECRET}},
        "default_provider": "hostile",
        "tool_discovery": cache,
    }
    beside = {**catalog_config(upstream_port), "default_provider": "hostile", "tool_discovery": cache}
    runs = [
        (CYRILLIC_ROWS[0], alone, 0, [cyrillic_body(seed) for seed in range(CYRILLIC_LISTS)]),
        (CYRILLIC_ROWS[1], beside, CATALOG_TOOLS - 1, [cyrillic_body(seed, 2, 40) for seed in range(SMALL_LISTS)]),
    ]
    return [
        await _cyrillic_row(name, config, tools, bodies, log_dir)
        for name, config, tools, bodies in runs
        if only in name or only == BOUNDED
    ]


async def _cyrillic_row(name: str, config: dict[str, Any], tools: int, bodies: list[str], log_dir: Path) -> list[str]:
    port = free_port()
    with (log_dir / "cyrillic-gateway.log").open("a") as log:
        gateway, _ = start_gateway(config, port, dict(os.environ), log)
    poller: HealthPoller | None = None
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            started = time.monotonic()
            while tools and await _big_tools(http) < tools:
                if gateway.poll() is not None or time.monotonic() - started > 300:
                    raise SystemExit("the gateway beside the catalog did not start")
                await asyncio.sleep(0.1)
            await asyncio.to_thread(wait_until_up, f"http://127.0.0.1:{port}/healthz", gateway)
            bench = Bench(http, Upstream(), port)
            await bench.post(cyrillic_body(-1))  # warm-up: imports, the worker pool, the index's first use
            poller = HealthPoller(port)
            await asyncio.sleep(1.0)
            before, begun = rss_mb(gateway.pid), time.monotonic()
            answers = [await bench.post(body) for body in bodies]
            took = time.monotonic() - begun
            after = rss_mb(gateway.pid)
            worst, answered = await poller.worst(begun, begun + took)
        result = judged(answers, 200)
        allowed = 1.5 * CYRILLIC_CACHE_MB * 1.048576  # MiB in MB
        result.expect(answered, "/healthz did not answer 200")
        result.expect(after - before <= allowed, f"memory +{after - before:.0f} MB > {allowed:.0f} MB")
        result.expect(worst * 1000 <= HEALTHZ_MS, f"/healthz took {worst * 1000:.0f} ms")
        return _row(name, result, took, worst, before, after)
    finally:
        if poller is not None:
            poller.close()
        gateway.terminate()
        gateway.wait(15)


# ---- end of the client-tool index block ----


# ---- What MCP servers send beside their answers: long log messages, event floods, stderr; a 5,000-tool listing ----
# A gateway of its own, logging at info (what a server logs reaches the log only then), on tests/servers/chatty.py
# over stdio and over streamable HTTP; then one on bench/hostile_mcp.py's 5,000 tools with the search model on.

CHATTY = Path(__file__).resolve().parent.parent / "tests" / "servers" / "chatty.py"
MESSAGES = "server messages"  # --only "server messages" runs this block's rows alone
LISTING_TOOLS, LISTING_S, LOG_GROWTH_MB = 5_000, 15.0, 5.0
CALLS["shout-64k"] = ("chatty__shout", json.dumps({"size": 65536, "count": 1}))
CALLS["shout-4x64k"] = ("chatty__shout", json.dumps({"size": 65536, "count": 4}))
CALLS["flood-200mb"] = ("remote__flood", json.dumps({"megabytes": 200, "size": 8192}))
CALLS["stderr-100mb"] = ("chatty__grumble", json.dumps({"megabytes": 100}))
MESSAGE_ROWS = (
    "MCP: a 64 KB log message (stdio) / MCP: 4 x 64 KB log messages (stdio) / MCP: 200 MB of events in one call "
    f"(streamable HTTP) / MCP: 100 MB of stderr (stdio) / MCP: {LISTING_TOOLS:,}-tool listing, model on"
)


def messages_config(upstream_port: int, remote_port: int) -> dict[str, Any]:
    chatty = {"command": sys.executable, "args": [str(CHATTY)], "defer_loading": False, "startup_timeout": 60}
    remote = {"url": f"http://127.0.0.1:{remote_port}/mcp", "defer_loading": False, "startup_timeout": 60}
    return {
        "providers": {"hostile": {"base_url": f"http://127.0.0.1:{upstream_port}/v1", "api_key": SECRET}},
        "mcpServers": {"chatty": chatty, "remote": remote},
        "tool_discovery": {"semantic": {"enabled": False}},
    }


async def answered_with(bench: Bench, model: str, needle: str) -> Result:
    """A chat whose model calls one tool: 200, and the tool's result (what the model is sent) holds `needle`."""
    result = judged([await bench.chat(model)], 200)
    seen = bench.upstream.tool_results.get(model, "")
    result.status += f", result has {needle!r}" if needle in seen else f", result {seen[:60]!r}"
    return result.expect(needle in seen, f"tool result: {seen[:100]!r}")


async def log_growth(bench: Bench, log: Path) -> Result:
    """100 MB of stderr from one call: the call answers and the gateway's log grows by at most LOG_GROWTH_MB."""
    before = log.stat().st_size
    result = await answered_with(bench, "stderr-100mb", "grumbled")
    await asyncio.sleep(1.0)  # what the gateway still reads from the pipe
    grown = (log.stat().st_size - before) / 1e6
    result.status += f", log +{grown:.2f} MB"
    return result.expect(grown <= LOG_GROWTH_MB, f"log grew {grown:.1f} MB > {LOG_GROWTH_MB:g} MB")


def message_probes(bench: Bench, log: Path) -> list[Probe]:
    return [
        ("MCP: a 64 KB log message (stdio)", 5, lambda: answered_with(bench, "shout-64k", "sent 1")),
        ("MCP: 4 x 64 KB log messages (stdio)", 5, lambda: answered_with(bench, "shout-4x64k", "sent 4")),
        (
            "MCP: 200 MB of events in one call (streamable HTTP)",
            60,
            lambda: answered_with(bench, "flood-200mb", "mcp_limits.max_call_bytes"),
        ),
        ("MCP: 100 MB of stderr (stdio)", 120, lambda: log_growth(bench, log)),
    ]


async def message_rows(upstream: Upstream, upstream_port: int, log_dir: Path, only: str) -> list[list[str]]:
    """The message probes against their own gateway (at log level info), then the 5,000-tool listing."""
    rows: list[list[str]] = []
    remote_port, port = free_port(), free_port()
    env = {**os.environ, "CHATTY_HTTP_PORT": str(remote_port)}
    quiet = subprocess.DEVNULL
    remote = subprocess.Popen([sys.executable, str(CHATTY)], env=env, stdout=quiet, stderr=quiet)
    log_path = log_dir / "messages-gateway.log"
    try:
        await asyncio.to_thread(wait_until_port, remote_port, remote)
        with log_path.open("w") as log:
            gateway, _ = start_gateway(
                messages_config(upstream_port, remote_port), port, dict(os.environ), log, ["--log-level", "info"]
            )
        poller: HealthPoller | None = None
        try:
            await asyncio.to_thread(wait_until_up, f"http://127.0.0.1:{port}/healthz", gateway)
            poller = HealthPoller(port)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=180) as http:
                bench = Bench(http, upstream, port)
                await bench.chat("plain")
                while not poller.polls:  # the poller's own start
                    await asyncio.sleep(0.05)
                for probe in message_probes(bench, log_path):
                    if only in probe[0] or only == MESSAGES:
                        rows.append(await run_probe(bench, poller, gateway.pid, probe))
        finally:
            if poller is not None:
                poller.close()
            gateway.terminate()
            gateway.wait(15)
    finally:
        remote.terminate()
        remote.wait(15)
    if only in f"MCP: {LISTING_TOOLS:,}-tool listing, model on" or only == MESSAGES:
        rows.append(await listing_row(upstream_port, log_dir))
    return rows


def wait_until_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the server on port {port} did not start")


async def listing_row(upstream_port: int, log_dir: Path) -> list[str]:
    """A gateway on a server listing 5,000 tools (`max_tools_per_server` 5,000), the search model on: from its
    start until it serves them (a search finds them), with the load average beside it (recorded, not judged)."""
    server = {
        "command": sys.executable, "args": [str(Path(__file__).resolve().parent / "hostile_mcp.py")],
        "env": {"TOOLS": str(LISTING_TOOLS)}, "defer_loading": True, "startup_timeout": 120,
    }  # fmt: skip
    config = {
        "providers": {"hostile": {"base_url": f"http://127.0.0.1:{upstream_port}/v1", "api_key": SECRET}},
        "mcpServers": {"big": server},
        "mcp_limits": {"max_tools_per_server": LISTING_TOOLS},
        "tool_discovery": {"semantic": {"enabled": True}},
    }
    port = free_port()
    load = os.getloadavg()[0]
    with (log_dir / "listing-gateway.log").open("w") as log:
        started = time.monotonic()
        gateway, _ = start_gateway(config, port, dict(os.environ), log)
    poller: HealthPoller | None = None
    try:
        await asyncio.to_thread(wait_until_port, port, gateway, 300)  # not until embedded: that is background work
        poller = HealthPoller(port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            while await _tools_of(http, "big") < LISTING_TOOLS or not poller.polls:
                if gateway.poll() is not None or time.monotonic() - started > 300:
                    raise SystemExit("the listing gateway did not serve its tools")
                await asyncio.sleep(0.1)
            bench = Bench(http, Upstream(), port)
            searched = await bench.chat("discover")
            elapsed, up = time.monotonic() - started, time.monotonic()
            await asyncio.sleep(2.0)  # the search model loads and embeds in the background meanwhile
            worst, answered = await poller.worst(up, time.monotonic())
            rss = rss_mb(gateway.pid)
        result = judged([searched], 200)
        result.status = f"{LISTING_TOOLS:,} tools served and searched, load {load:.1f} -> {os.getloadavg()[0]:.1f}"
        result.expect(elapsed <= LISTING_S, f"took {elapsed:.1f} s > {LISTING_S:g} s")
        result.expect(answered, "/healthz did not answer 200")
        result.expect(worst * 1000 <= HEALTHZ_MS, f"/healthz took {worst * 1000:.0f} ms")
        return _row(f"MCP: {LISTING_TOOLS:,}-tool listing, model on", result, elapsed, worst, 0.0, rss)
    finally:
        if poller is not None:
            poller.close()
        gateway.terminate()
        gateway.wait(15)


async def _tools_of(http: httpx.AsyncClient, name: str) -> int:
    try:
        server = (await http.get("/healthz", timeout=1)).json()["servers"][name]
    except (httpx.HTTPError, ValueError, KeyError):
        return -1
    return int(server["tools"]) if server["state"] == "up" else -1


# ---- end of the server-messages block ----


POLLER = """
import http.client, sys, time
connection = None
while True:
    started = time.monotonic()
    try:
        connection = connection or http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        ok = response.status == 200 and bool(response.read())
    except OSError:
        connection, ok = None, False
    print(started, time.monotonic(), int(ok), flush=True)
    time.sleep(0.02)
"""


class HealthPoller:
    """`/healthz` every 20 ms from its own process (this one is busy being the clients and the upstream), timed
    on the system's monotonic clock, which both processes share."""

    def __init__(self, port: int) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", POLLER, str(port)], stdout=subprocess.PIPE, text=True)
        self.polls: list[tuple[float, float, bool]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            started, ended, ok = line.split()
            self.polls.append((float(started), float(ended), ok == "1"))

    async def worst(self, start: float, end: float) -> tuple[float, bool]:
        """The slowest poll (seconds) overlapping [start, end] or starting right after, and whether all were 200."""
        while not self.polls or self.polls[-1][0] < end + 0.03:
            if self.process.poll() is not None:
                raise SystemExit("the /healthz poller stopped")
            await asyncio.sleep(0.02)
        overlapping = [(e - s, ok) for s, e, ok in self.polls if s <= end + 0.03 and e >= start]
        return max(latency for latency, _ in overlapping), all(ok for _, ok in overlapping)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(5)


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]) / 1024


async def run_probe(bench: Bench, poller: HealthPoller, pid: int, probe: Probe, retry: bool = True) -> list[str]:
    """The probe's row. A row whose only problem is one slow /healthz is run once more and fails only if that is
    slow too: on a shared machine the gateway (or the poller) can be descheduled for 100 ms without any blocking."""
    name, bound, run = probe
    before, started = rss_mb(pid), time.monotonic()
    try:
        result = await run()
    except Exception as exc:  # a probe that could not finish is a failed row, not a crashed bench
        result = Result(type(exc).__name__, [f"{type(exc).__name__}: {str(exc)[:100]}"])
    elapsed = time.monotonic() - started
    for _ in range(40):  # upstream requests the gateway still holds open after the client is done
        if bench.upstream.open == 0:
            break
        await asyncio.sleep(0.05)
    result.expect(bench.upstream.open == 0, f"{bench.upstream.open} upstream requests left open")
    result.expect(elapsed <= bound, f"took {elapsed:.1f} s > {bound:g} s")
    worst, answered = await poller.worst(started, started + elapsed)
    result.expect(answered, "/healthz did not answer 200")
    after = rss_mb(pid)
    allowed = BIG_MEMORY_MB if "MB" in name else MEMORY_MB  # a 16 MB body is held while it is served
    result.expect(after - before <= allowed, f"memory +{after - before:.0f} MB")
    healthz = f"{worst * 1000:.0f}"
    if worst * 1000 > HEALTHZ_MS:
        if retry and not result.problems:
            again = await run_probe(bench, poller, pid, probe, retry=False)
            return [*again[:3], f"{healthz}, again {again[3]}", *again[4:]]
        result.expect(False, f"/healthz took {healthz} ms")
    verdict = "FAIL: " + "; ".join(result.problems) if result.problems else "ok"
    return [name, result.status, f"{elapsed:.2f}", healthz, f"{before:.0f} -> {after:.0f}", verdict]


def gateway_config(upstream_port: int) -> dict[str, Any]:
    closed = free_port()
    providers = {
        "hostile": {
            "base_url": f"http://127.0.0.1:{upstream_port}/v1",
            "api_key": SECRET,
            "max_retries": 0,
            "max_response_bytes": 16 * 1024 * 1024,  # the 20 MB answers must pass the bound (default 32 MiB)
        },
        "leaky": {"base_url": f"http://bench:{URL_SECRET}@127.0.0.1:{closed}/v1", "api_key": SECRET, "max_retries": 0},
    }
    return demo_config(
        providers=providers,
        default_provider="hostile",
        models={"leaky-url": {"provider": "leaky", "model": "m"}},
        tool_discovery={"enabled": True, "max_search_results": 5, "prefetch": 3},
        request_deadline=DEADLINE,
        stream_keepalive_seconds=1.0,
        client_header_timeout=HEADER_TIMEOUT,
        client_body_timeout=BODY_TIMEOUT,
    )


def print_table(rows: list[list[str]]) -> None:
    header = ["probe", "status", "time s", "healthz ms", "RSS MB", "verdict"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * width for width in widths], *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def machine_line() -> str:
    host = machine()
    return f"{host['cpu']}, {host['logical_cores']} cores, Python {host['python']}"


def row_record(row: list[str]) -> dict[str, Any]:
    """A printed row as numbers: a slow /healthz that was run again shows both tries."""
    healthz = [int(value) for value in row[3].split(", again ")]
    before, after = (int(value) for value in row[4].split(" -> "))
    tries = {"healthz_first_try_ms": healthz[0]} if len(healthz) > 1 else {}
    return {
        "probe": row[0],
        "status": row[1],
        "time_s": float(row[2]),
        "healthz_ms": healthz[-1],
        **tries,
        "rss_before_mb": before,
        "rss_after_mb": after,
        "ok": row[5] == "ok",
        "verdict": row[5],
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run only the probes whose name contains this")
    add_record_options(parser, "abuse")
    args = parser.parse_args()
    upstream, upstream_port, port = Upstream(), free_port(), free_port()
    server = uvicorn.Server(uvicorn.Config(upstream, port=upstream_port, log_level="warning", lifespan="off"))
    serving = asyncio.ensure_future(server.serve())
    log_path = Path(tempfile.mkdtemp(prefix="toolsift-abuse-")) / "gateway.log"
    with log_path.open("w") as log:
        gateway, _ = start_gateway(gateway_config(upstream_port), port, dict(os.environ), log)
    rows: list[list[str]] = []
    try:
        await asyncio.to_thread(wait_until_up, f"http://127.0.0.1:{port}/healthz", gateway)
        poller = HealthPoller(port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            bench = Bench(http, upstream, port)
            for _ in range(3):  # warm-up: imports, connections, the search index's first use
                await bench.chat("discover")
            start_rss = rss_mb(gateway.pid)
            bounded = {name for name, _, _ in bounded_work_probes(bench)}
            for probe in probes(bench):
                if args.only in probe[0] or (args.only == BOUNDED and probe[0] in bounded):
                    rows.append(await run_probe(bench, poller, gateway.pid, probe))
            end_rss = rss_mb(gateway.pid)
        poller.close()
        if args.only in CATALOG_ROWS or args.only == BOUNDED:
            rows.extend(await catalog_rows(upstream_port, log_path.parent))
        if any(args.only in name for name in CYRILLIC_ROWS) or args.only == BOUNDED:
            rows.extend(await cyrillic_rows(upstream_port, log_path.parent, args.only))
        if args.only in MESSAGE_ROWS or args.only == MESSAGES:
            rows.extend(await message_rows(upstream, upstream_port, log_path.parent, args.only))
    finally:
        gateway.terminate()
        gateway.wait(15)
        server.should_exit = True
        await serving
    load_average = os.getloadavg()[0]
    print(f"toolsift under abuse: {machine_line()}, load average {load_average:.1f} at the end")
    print(f"each row: its status, within its time bound, /healthz <= {HEALTHZ_MS:g} ms, memory +{MEMORY_MB:g} MB")
    print(f"(+{BIG_MEMORY_MB:g} MB for 16-20 MB payloads), tool results <= {RESULT_CHARS:,} chars, no secret seen\n")
    print_table(rows)
    failed = sum(row[-1] != "ok" for row in rows)
    print(f"\n{len(rows) - failed}/{len(rows)} ok; gateway RSS {start_rss:.0f} -> {end_rss:.0f} MB; log: {log_path}")
    if not args.no_record:
        results = {
            "bounds": {"healthz_ms": HEALTHZ_MS, "memory_mb": MEMORY_MB, "big_memory_mb": BIG_MEMORY_MB,
                       "result_chars": RESULT_CHARS},
            "probes": [row_record(row) for row in rows],
            "ok": len(rows) - failed,
            "total": len(rows),
            "gateway_rss_start_mb": start_rss,
            "gateway_rss_end_mb": end_rss,
            "load_average_at_end": load_average,
        }  # fmt: skip
        record(args.out or "abuse", results, load_generator="python httpx (asyncio); /healthz polled by http.client")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
