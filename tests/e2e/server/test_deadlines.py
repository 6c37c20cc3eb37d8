"""The request deadline and the client's departure end a request in every phase, over real sockets: a real uvicorn
gateway, a loopback upstream that counts the requests it still has open, and clients that give up.

Phases: before the upstream's first chunk (an upstream that sends only SSE comments, or headers then nothing),
between chunks, and while tools run; plain and streamed."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
import pytest
import uvicorn
from fastmcp import FastMCP

from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.server.app import create_app
from tests.support import chat_body, completion, free_port, make_config

Behaviour = Callable[[dict[str, Any], asyncio.StreamWriter], Awaitable[None]]
CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


class CountingUpstream:
    """A loopback upstream; `open` counts requests read whose answer is unfinished and whose connection is open."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.open = 0
        self.seen = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.lower().split(b"\r\n")
            length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
            request = json.loads(await reader.readexactly(length))
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        self.open += 1
        self.seen += 1
        work = asyncio.ensure_future(self.behaviour(request, writer))
        gone = asyncio.ensure_future(reader.read())  # b"" once the gateway closes the connection
        try:
            await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.open -= 1
            work.cancel()
            gone.cancel()
            writer.close()

    async def wait_until_idle(self, within: float) -> int:
        """Open requests left after waiting up to `within` seconds for them to end."""
        deadline = time.monotonic() + within
        while self.open and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return self.open

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"


def _sse_head(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")


async def _chunk(writer: asyncio.StreamWriter, text: str) -> None:
    writer.write(b"%x\r\n%s\r\n" % (len(text), text.encode()))
    await writer.drain()


async def only_comments(request: dict[str, Any], writer: asyncio.StreamWriter) -> None:
    """Streamed: SSE comments forever, never a chunk. Plain: headers, then nothing."""
    if not request.get("stream"):
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(120)
    _sse_head(writer)
    while True:
        await _chunk(writer, ": ping\n\n")
        await asyncio.sleep(0.05)


async def slow_start(request: dict[str, Any], writer: asyncio.StreamWriter) -> None:
    """A stream whose first chunk comes after 1.2 s, then a normal answer."""
    _sse_head(writer)
    await writer.drain()
    await asyncio.sleep(1.2)
    delta = {**CHUNK, "choices": [{"index": 0, "delta": {"content": "late but fine"}, "finish_reason": "stop"}]}
    await _chunk(writer, f"data: {json.dumps(delta)}\n\ndata: [DONE]\n\n")
    await _chunk(writer, "")


async def late_error(request: dict[str, Any], writer: asyncio.StreamWriter) -> None:
    """A rate-limit answer after 0.8 s: later than the first keep-alive."""
    await asyncio.sleep(0.8)
    body = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()
    writer.write(b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n")
    writer.write(b"content-length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()


async def pause_between_chunks(request: dict[str, Any], writer: asyncio.StreamWriter) -> None:
    """A first chunk at once, the second after 1 s."""
    _sse_head(writer)
    for text, finish, pause in (("first ", None, 1.0), ("second", "stop", 0)):
        delta = {**CHUNK, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
        await _chunk(writer, f"data: {json.dumps(delta)}\n\n")
        await asyncio.sleep(pause)
    await _chunk(writer, "data: [DONE]\n\n")
    await _chunk(writer, "")


def slow_tool_server(started: asyncio.Event, cancelled: asyncio.Event) -> FastMCP:
    server = FastMCP("slow")

    @server.tool
    async def crunch(size: int) -> str:
        """Crunch numbers for a long time."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "done"

    return server


def tool_call_then_answer(tool: str) -> Behaviour:
    """First request: a call to `tool` (plain or streamed as asked); later requests: never answered."""
    calls = 0

    async def behave(request: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            await asyncio.sleep(120)
        reply = completion(calls=[(tool, {"size": 3})])
        if not request.get("stream"):
            body = json.dumps(reply).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body))
            writer.write(body)
            await writer.drain()
            return
        _sse_head(writer)
        call = reply["choices"][0]["message"]["tool_calls"][0]
        delta = {"tool_calls": [{"index": 0, **call}]}
        chunk = {**CHUNK, "choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}]}
        await _chunk(writer, f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n")
        await _chunk(writer, "")

    return behave


@asynccontextmanager
async def running(behaviour: Behaviour, targets: dict[str, Any] | None = None, **config: Any) -> AsyncIterator[Any]:
    """The upstream and a gateway served by uvicorn on loopback; yields (gateway URL, upstream)."""
    upstream = CountingUpstream(behaviour)
    upstream.server = await asyncio.start_server(upstream._serve, "127.0.0.1", 0)
    providers = {"up": {"base_url": upstream.url, "api_key": "sk-test-secret", "max_retries": 0, "read_timeout": 120}}
    settings = {"providers": providers, "tool_sets": {}, "mcpServers": {}, "stream_keepalive_seconds": 0.2, **config}
    gateway = Gateway(make_config(**settings), mcp_targets=targets or {})
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(Engine(gateway)), host="127.0.0.1", port=port, log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", upstream
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        upstream.server.close()


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and "[DONE]" not in line]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_upstream_that_never_sends_a_chunk_ends_at_the_deadline(stream: bool) -> None:
    async with running(only_comments, request_deadline=1.0) as (url, upstream):
        async with httpx.AsyncClient(timeout=30) as client:  # the upstream's pace would be forever: a hang fails
            posted = client.post(f"{url}/v1/chat/completions", json=chat_body("x", stream=stream))
            response = await asyncio.wait_for(posted, 30)
        if stream:
            assert response.status_code == 200
            assert response.text.startswith(": keep-alive\n\n"), "keep-alives while the upstream is slow to start"
            error = _events(response.text)[-1]["error"]
        else:
            assert response.status_code == 504
            error = response.json()["error"]
        assert error["code"] == "request_deadline" and "1s deadline" in error["message"]
        assert await upstream.wait_until_idle(3) == 0, "the upstream request was cancelled"


async def test_the_sdk_sees_the_deadline_as_an_api_error() -> None:
    async with running(only_comments, request_deadline=0.5) as (url, _):
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        messages: Any = [{"role": "user", "content": "x"}]
        stream = await client.chat.completions.create(model="fast", messages=messages, stream=True)
        with pytest.raises(openai.APIError, match="deadline"):
            async for _ in stream:
                pass


async def test_keepalives_flow_while_the_upstream_is_slow_to_start() -> None:
    async with running(slow_start, stream_keepalive_seconds=0.1) as (url, _):
        lines: list[str] = []
        body, endpoint = chat_body("x", stream=True), f"{url}/v1/chat/completions"
        async with httpx.AsyncClient(timeout=30) as client, client.stream("POST", endpoint, json=body) as reply:
            async for line in reply.aiter_lines():
                lines.append(line)
        first_data = next(index for index, line in enumerate(lines) if line.startswith("data:"))
        assert lines[:first_data].count(": keep-alive") >= 5, lines[:first_data]
        content = "".join(
            event["choices"][0]["delta"].get("content") or "" for event in _events("\n".join(lines)) if event["choices"]
        )
        assert content == "late but fine"


async def test_keepalives_flow_between_slow_chunks() -> None:
    async with running(pause_between_chunks, stream_keepalive_seconds=0.1) as (url, _):
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.post(f"{url}/v1/chat/completions", json=chat_body("x", stream=True))
        between = response.text.split('"first "', 1)[1].split('"second"', 1)[0]
        assert between.count(": keep-alive\n\n") >= 5, between


async def test_an_error_after_the_first_keepalive_ends_the_stream_with_an_error_event() -> None:
    async with running(late_error, stream_keepalive_seconds=0.2) as (url, _):
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.post(f"{url}/v1/chat/completions", json=chat_body("x", stream=True))
        assert response.status_code == 200, "the head went out with the first keep-alive"
        assert response.text.startswith(": keep-alive\n\n")
        error = _events(response.text)[-1]["error"]
        assert error["type"] == "rate_limit_error" and "slow down" in error["message"]


@pytest.mark.parametrize("stream", [True, False])
async def test_clients_that_give_up_leave_no_upstream_request_running(stream: bool) -> None:
    async with running(only_comments, request_deadline=60) as (url, upstream):
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=100)) as client:

            async def give_up() -> None:
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(1.0):
                        await client.post(f"{url}/v1/chat/completions", json=chat_body("x", stream=stream))

            await asyncio.gather(*(give_up() for _ in range(30)))
        assert upstream.seen == 30
        assert await upstream.wait_until_idle(3) == 0, f"{upstream.open} upstream requests still running"


@pytest.mark.parametrize("stream", [True, False])
async def test_a_client_that_leaves_while_tools_run_cancels_them(stream: bool) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    targets = {"slow": slow_tool_server(started, cancelled)}
    servers = {"slow": {"command": "unused"}}
    async with running(tool_call_then_answer("slow__crunch"), targets, mcpServers=servers) as (url, upstream):
        async with httpx.AsyncClient(timeout=30) as client:
            body = chat_body("x", stream=stream)
            request = asyncio.ensure_future(client.post(f"{url}/v1/chat/completions", json=body))
            await asyncio.wait_for(started.wait(), 5)
            request.cancel()
            await asyncio.wait({request})
        await asyncio.wait_for(cancelled.wait(), 5)
        await asyncio.sleep(0.3)
        assert upstream.seen == 1, "no further upstream round after the client left"


@pytest.mark.parametrize("stream", [True, False])
async def test_the_deadline_ends_a_request_while_tools_run(stream: bool) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    targets = {"slow": slow_tool_server(started, cancelled)}
    servers = {"slow": {"command": "unused"}}
    behaviour = tool_call_then_answer("slow__crunch")
    async with running(behaviour, targets, mcpServers=servers, request_deadline=1.0) as (url, _):
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.post(f"{url}/v1/chat/completions", json=chat_body("x", stream=stream))
        error = _events(response.text)[-1]["error"] if stream else response.json()["error"]
        assert response.status_code == (200 if stream else 504)
        assert error["code"] == "request_deadline"
        await asyncio.wait_for(cancelled.wait(), 5)
